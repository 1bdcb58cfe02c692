"""A thread's checkpoints copied under another thread ID: what a copied thread's orchestration starts from."""

from __future__ import annotations

import uuid
from typing import Any

from durabletask.extensions.langgraph._saver import ReplaySaver


def rekeyed(saver: ReplaySaver, source: str, target: str) -> ReplaySaver:
    """A saver holding ``source`` 's checkpoints, writes and blobs under the thread ID ``target``."""
    copy = ReplaySaver()
    for ns, checkpoints in saver.storage.get(source, {}).items():
        copy.storage[target][ns].update(checkpoints)
    for (thread, ns, checkpoint_id), inner in saver.writes.items():
        if thread == source:
            copy.writes[(target, ns, checkpoint_id)] = dict(inner)
    for (thread, ns, channel, version), value in saver.blobs.items():
        if thread == source:
            copy.blobs[(target, ns, channel, version)] = value
    return copy


def counter_after(saver: ReplaySaver, thread_id: str) -> int:
    """The id counter a copy goes on from: past every checkpoint id it holds (their leading 48 bits)."""
    highest = 0
    for checkpoints in saver.storage.get(thread_id, {}).values():
        for checkpoint_id in checkpoints:
            try:
                highest = max(highest, uuid.UUID(checkpoint_id).int >> 80)
            except ValueError:  # an id this extension did not make: it does not constrain the counter
                continue
    return highest


def copy_carry(saver: ReplaySaver, source: str, target: str, graph: dict[str, Any]) -> dict[str, Any]:
    """What the copy's orchestration starts with: the checkpoints under ``target``, the counter past them."""
    copy = rekeyed(saver, source, target)
    return {
        "saver": copy.export(),
        "counter": counter_after(copy, target),
        "done": [],
        "thread_id": target,
        "graph": graph,
        "interrupts": None,
        "queue": [],
        "tasks": 0,
    }
