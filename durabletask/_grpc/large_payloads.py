"""The one place payloads cross to and from a payload store: on protobuf messages at the gRPC boundary.

The clients call :class:`PayloadBoundary` on each request before it is sent and on each response after it is
received; the worker on each work item it receives, each history page it fetches each result it sends.
Nothing above the boundary (replay core, runners, models) fetches or stores a payload. The worker's
orchestrations and activities see their payloads' tokens in their messages and take each payload, already
fetched here, from :class:`FetchedPayloads` as they decode it.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Callable, Iterable
from typing import Any

from google.protobuf.message import Message

from durabletask._json_codec import MAX_PAYLOAD_BYTES
from durabletask.payload.helpers import (
    MAX_TOKEN_BYTES,
    deexternalize_payloads,
    deexternalize_payloads_async,
    externalize,
    externalize_payloads,
    externalize_payloads_async,
    fetch_payloads,
    fetch_text,
    holds_tokens,
    instance_of,
)
from durabletask.payload.store import PayloadStore

#: Results the worker sends back; their payloads go to the store above the threshold.
_WORKER_SENDS = frozenset({"CompleteOrchestratorTask", "CompleteActivityTask", "CompleteEntityTask"})


def payload_limit(store: PayloadStore | None) -> int:
    """The largest payload one field may hold: the service's 1 MiB, or the store's limit when there is one."""
    return MAX_PAYLOAD_BYTES if store is None else max(MAX_PAYLOAD_BYTES, store.options.max_stored_payload_bytes)


def _messages(response: Any) -> Iterable[Message]:
    if isinstance(response, Message):
        return (response,)
    if isinstance(response, list):  # a streamed answer, read in full
        return [m for m in response if isinstance(m, Message)]
    return ()


def _request_of(item: Message) -> Message | None:
    kind = item.WhichOneof("request")
    if kind is None or kind == "healthPing":
        return None
    request: Message = getattr(item, kind)
    return request


class PayloadBoundary:
    """Externalizes outgoing payloads and restores incoming ones for one :class:`PayloadStore`."""

    __slots__ = ("store",)

    def __init__(self, store: PayloadStore) -> None:
        self.store = store

    def outgoing(self, request: Message, instance_id: str | None = None) -> None:
        """Store the request's large payloads and put their tokens in their place.

        ``instance_id`` is for messages that do not name their instance (an entity batch's result).
        """
        externalize_payloads(request, self.store, instance_id=instance_id)

    def result(self, response: Message, instance_id: str | None = None) -> None:
        """:meth:`outgoing` for a worker's result.

        An orchestration that has just finished leaves its replay state (the payloads it decoded among it) in
        reference cycles that Python frees only at its next cycle collection. When the result holds a payload
        to store, that collection is run first, so those payloads are gone before the upload's copies exist:
        a payload's worth of memory less at the worker's peak, paid only when a large payload is stored.
        """
        externalize(response, self.store, instance_id=instance_id, before_first=gc.collect)

    def incoming(self, response: Any) -> None:
        """Put back the payloads whose tokens a response (or the messages of a streamed one) holds."""
        for message in _messages(response):
            deexternalize_payloads(message, self.store)

    async def outgoing_async(self, request: Message) -> None:
        """:meth:`outgoing` with the store's asyncio methods."""
        await externalize_payloads_async(request, self.store)

    async def incoming_async(self, response: Any) -> None:
        """:meth:`incoming` with the store's asyncio methods."""
        for message in _messages(response):
            await deexternalize_payloads_async(message, self.store)

    def work_item(self, item: Message) -> str | None:
        """Restore the payloads of a received work item (its request, history and entity operations).

        Returns the instance the work item is for.
        """
        request = _request_of(item)
        if request is None:
            return None
        instance_id = instance_of(request)
        deexternalize_payloads(request, self.store, instance_id=instance_id)
        return instance_id

    def holds_tokens(self, item: Message) -> bool:
        """Whether a received work item holds a payload token (or something posing as one), without fetching."""
        request = _request_of(item)
        return request is not None and holds_tokens(request, self.store)

    @staticmethod
    def instance_of(item: Message) -> str | None:
        """The instance a received work item is for."""
        request = _request_of(item)
        return None if request is None else instance_of(request)

    def history_fetcher(self, fetch: Callable[[Any], list[Any]]) -> Callable[[Any], list[Any]]:
        """``fetch`` (a work item's streamed history) with the payloads of the fetched events restored."""

        def restored(request: Any) -> list[Any]:
            events = fetch(request)
            instance_id = getattr(request, "instanceId", None)
            for event in events:
                deexternalize_payloads(event, self.store, instance_id=instance_id)
            return events

        return restored


#: History events whose payload the replay never decodes (what the orchestration itself sent, checked by name
#: only): their tokens are not fetched. Were one decoded after all, :meth:`FetchedPayloads.resolve` fetches it.
_NOT_DECODED = (
    ".taskScheduled.",
    ".subOrchestrationInstanceCreated.",
    ".eventSent.",
    ".entityOperationCalled.",
    ".entityOperationSignaled.",
    ".executionTerminated.",
    ".executionCompleted.",
)


class FetchedPayloads:
    """The worker's :class:`~durabletask._codec.PayloadSource`: payloads fetched on a work item's arrival,
    kept apart from its message (which keeps the tokens), each handed over once, when the runner decodes it.

    Restored into the message instead, a payload stays in protobuf's memory for the whole work item (one arena
    for the message tree, freed only when nothing references any of it), beside the text read out of it and
    the decoded value. Fetching on arrival keeps a store failure where it was: before the item runs, reported
    (or the item handed back) by :class:`~durabletask._worker.large_payloads.PayloadWorkItems`.
    """

    def __init__(self, store: PayloadStore) -> None:
        self._store = store
        self._lock = threading.Lock()
        self._texts: dict[str, str] = {}  # token -> payload, until decoded or its work items are done
        # How many work items under way fetched each token: one instance's consecutive turns (and a work item
        # handed out again) carry the same tokens, and one item's end must not drop what the next has fetched.
        self._holders: dict[str, int] = {}

    def fetch(self, item: Message) -> tuple[str | None, list[str]]:
        """Fetch the payloads of a received work item; returns its instance and the tokens fetched."""
        request = _request_of(item)
        if request is None:
            return None, []
        instance_id = instance_of(request)
        texts = fetch_payloads(request, self._store, instance_id=instance_id, skip=_NOT_DECODED)
        with self._lock:
            self._texts.update(texts)
            for token in texts:
                self._holders[token] = self._holders.get(token, 0) + 1
        return instance_id, list(texts)

    def forget(self, tokens: Iterable[str]) -> None:
        """A work item is done: drop what it fetched that no other item under way holds (decoded or not)."""
        with self._lock:
            for token in tokens:
                left = self._holders.get(token, 1) - 1
                if left > 0:
                    self._holders[token] = left
                else:
                    self._holders.pop(token, None)
                    self._texts.pop(token, None)

    def resolve(self, text: str) -> str:
        """The payload a token stands for, else ``text``.

        Handed over when decoded: given up by the table then (the text lives on only in the decoding frame),
        unless another work item under way fetched it too.
        """
        if len(text) > MAX_TOKEN_BYTES or not self._store.is_known_token(text):
            return text
        with self._lock:
            shared = self._holders.get(text, 0) > 1
            fetched = self._texts.get(text) if shared else self._texts.pop(text, None)
        if fetched is not None:
            return fetched
        # Decoded a second time in the same turn (its text was given up at the first): fetched again.
        return fetch_text(self._store, text, "payload", None)


class PayloadStub:
    """A worker's sidecar stub whose results go out with their large payloads externalized.

    Only the calls in ``_WORKER_SENDS`` are touched; every other attribute is the wrapped stub's.
    """

    def __init__(self, stub: Any, boundary: PayloadBoundary, instance_id: str | None = None) -> None:
        self._stub = stub
        self._boundary = boundary
        self._instance_id = instance_id

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._stub, name)
        if name in _WORKER_SENDS:
            return self._sending(method)
        return method

    def _sending(self, method: Any) -> Any:
        def call(request: Message, *args: Any, **kwargs: Any) -> Any:
            self._boundary.result(request, self._instance_id)
            return method(request, *args, **kwargs)

        return call
