"""Clients that are slow on purpose, over real sockets: they send nothing, half a request, or a trickle.

Each attack ends by waiting for the server to close the connection, under ``CEILING``: a bound many times the
limits the servers under test are given, so a loaded machine only makes a test slower, never wrong.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import urllib.parse
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

CEILING = 60.0  # seconds an attack may take to be cut off before its test fails

Stream = tuple[asyncio.StreamReader, asyncio.StreamWriter]


async def connect(url: str) -> Stream:
    """A raw TCP connection to the server at ``url`` (``http://host:port``)."""
    parts = urllib.parse.urlsplit(url)
    assert parts.hostname is not None and parts.port is not None, url
    return await asyncio.open_connection(parts.hostname, parts.port)


@contextlib.asynccontextmanager
async def attacker(url: str) -> AsyncIterator[Stream]:
    """``connect``, closed on exit whatever the server did."""
    reader, writer = await connect(url)
    try:
        yield reader, writer
    finally:
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()


async def closed_by_server(reader: asyncio.StreamReader) -> bytes:
    """Everything the server sent until it closed the connection; raises if it is still open at ``CEILING``."""
    received = b""
    async with asyncio.timeout(CEILING):
        while chunk := await reader.read(65536):
            received += chunk
    return received


@contextlib.asynccontextmanager
async def trickling(writer: asyncio.StreamWriter, first: bytes, every: float) -> AsyncIterator[None]:
    """Sends ``first``, then one more byte of a header every ``every`` seconds, until the block ends."""

    async def send() -> None:
        writer.write(first)
        with contextlib.suppress(OSError):
            while True:
                writer.write(b"X")
                await writer.drain()
                await asyncio.sleep(every)

    task = asyncio.create_task(send())
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


def status_and_json_body(answer: bytes) -> tuple[bytes, bytes]:
    """The status line and the body of one HTTP/1.1 answer read whole."""
    status, _, rest = answer.partition(b"\r\n")
    return status, rest.split(b"\r\n\r\n", 1)[1]


Served = Callable[[], Awaitable[None]]


async def half_a_head_is_cut(url: str, part: bytes, served: Served) -> None:
    """Sends ``part`` of a request head and stops: ``served()`` (another client's request) is answered meanwhile,
    and the server closes the connection without an answer."""
    async with attacker(url) as (reader, writer):
        writer.write(part)
        await writer.drain()
        await served()
        assert await closed_by_server(reader) == b""


async def trickled_head_is_cut(url: str, first: bytes, every: float, served: Served) -> None:
    """Sends a head's ``first`` bytes, then one more byte every ``every`` seconds: the same outcome."""
    async with attacker(url) as (reader, writer), trickling(writer, first, every):
        await served()
        assert await closed_by_server(reader) == b""


async def half_a_body_answer(url: str, head: str, part: bytes, served: Served) -> tuple[bytes, Any]:
    """Sends ``head`` declaring a body four times as long as ``part``, then ``part``; returns the status line and
    the JSON body of what the server answered before it closed the connection."""
    async with attacker(url) as (reader, writer):
        writer.write(f"{head}Content-Length: {len(part) * 4}\r\n\r\n".encode() + part)
        await writer.drain()
        await served()
        answer = await closed_by_server(reader)
    status, body = status_and_json_body(answer)
    return status, json.loads(body)


async def silent_crowd_is_cut(url: str, served: Served, count: int = 50) -> None:
    """Opens ``count`` connections that send nothing: ``served()`` is answered, and each is closed."""
    crowd = [await connect(url) for _ in range(count)]
    try:
        await served()
        for reader, _ in crowd:
            assert await closed_by_server(reader) == b""
    finally:
        for _, writer in crowd:
            writer.close()
