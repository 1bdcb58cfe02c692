"""The thread's checkpointer inside the orchestrator: LangGraph's in-memory saver with replay-safe versions.

DTS history is the durable record; this saver is rebuilt from it on every replay, so nothing it makes may
depend on chance or the clock (checkpoint ids come from ``_internals.IdSource``).
"""

from __future__ import annotations

from typing import Any

from langgraph.checkpoint.memory import InMemorySaver

from durabletask.extensions.langgraph._serde import dump, load, serializer


class ReplaySaver(InMemorySaver):
    """An ``InMemorySaver`` whose channel versions are plain counters (no random suffix)."""

    def __init__(self) -> None:
        super().__init__(serde=serializer())

    def get_next_version(self, current: str | None, channel: None) -> str:
        if current is None:
            number = 0
        elif isinstance(current, int):
            number = current
        else:
            number = int(current.split(".")[0])
        return f"{number + 1:032}.{0:016}"

    def export(self, namespace: str | None = None) -> dict[str, str]:
        """What is saved, as one JSON-safe payload (the values stay in LangGraph's serialized form).

        With ``namespace``, only that checkpoint namespace and the ones nested in it (a subgraph's).
        """

        def wanted(ns: str) -> bool:
            return namespace is None or ns == namespace or ns.startswith(namespace + "|")

        storage = [
            [thread, ns, cid, list(entry)]
            for thread, spaces in self.storage.items()
            for ns, checkpoints in spaces.items()
            if wanted(ns)
            for cid, entry in checkpoints.items()
        ]
        writes = [
            [list(outer), list(inner), list(entry)]
            for outer, inner_map in self.writes.items()
            if wanted(outer[1])
            for inner, entry in inner_map.items()
        ]
        blobs = [[list(key), list(value)] for key, value in self.blobs.items() if wanted(key[1])]
        return dump({"storage": storage, "writes": writes, "blobs": blobs}, "the thread's checkpoints")

    @classmethod
    def restore(cls, payload: dict[str, str] | None) -> ReplaySaver:
        """A saver holding what :meth:`export` wrote (an empty one for ``None``)."""
        saver = cls()
        if payload is not None:
            saver.merge(payload)
        return saver

    def merge(self, payload: dict[str, str]) -> None:
        """Add what another saver's :meth:`export` wrote (entries with the same keys are replaced)."""
        saver = self
        data: dict[str, Any] = load(payload)
        for thread, ns, cid, (cp, md, parent) in data["storage"]:
            saver.storage[thread][ns][cid] = (tuple(cp), tuple(md), parent)
        for outer, inner, (task_id, channel, typed, path) in data["writes"]:
            saver.writes[tuple(outer)][tuple(inner)] = (task_id, channel, tuple(typed), path)
        for key, value in data["blobs"]:
            saver.blobs[tuple(key)] = tuple(value)

    def forget_before(self, thread_id: str, keep_from: str | None) -> None:
        """Keep the root checkpoints from ``keep_from`` on (and the latest), and what they need; drop the rest.

        Subgraph checkpoints are kept only for tasks the latest checkpoint still has writes for (an interrupted
        subgraph). Used when the thread continues as new, so its carried state does not grow with its age.
        """
        root = self.storage[thread_id][""]
        if not root:
            return
        latest = max(root)
        kept = {cid for cid in root if keep_from is not None and cid >= keep_from} | {latest}
        for cid in [cid for cid in root if cid not in kept]:
            del root[cid]
        pending_tasks = {task_id for (_, task_id, _, _) in self.writes.get((thread_id, "", latest), {}).values()}
        for ns in [ns for ns in self.storage[thread_id] if ns and ns.split("|")[0].split(":")[-1] not in pending_tasks]:
            del self.storage[thread_id][ns]
        spaces = self.storage[thread_id]
        for outer in [k for k in self.writes if k[0] == thread_id and (k[1] not in spaces or k[2] not in spaces[k[1]])]:
            del self.writes[outer]
        needed = {
            (ns, channel, version)
            for ns, checkpoints in spaces.items()
            for saved, _, _ in checkpoints.values()
            for channel, version in self.serde.loads_typed(saved)["channel_versions"].items()
        }
        for blob in [k for k in self.blobs if k[0] == thread_id and (k[1], k[2], k[3]) not in needed]:
            del self.blobs[blob]

    def export_checkpoint(self, thread_id: str, checkpoint_id: str | None) -> dict[str, str]:
        """What ``get_state`` reads: one root checkpoint (the latest by default) with its writes and blobs, and
        the subgraph namespaces; everything when that checkpoint is not here."""
        root = self.storage[thread_id][""]
        chosen = checkpoint_id or (max(root) if root else None)
        if chosen is None or chosen not in root:
            return self.export()
        part = ReplaySaver()
        part.storage[thread_id][""][chosen] = root[chosen]
        for ns, checkpoints in self.storage[thread_id].items():
            if ns:
                part.storage[thread_id][ns].update(checkpoints)
        versions = self.serde.loads_typed(root[chosen][0])["channel_versions"]
        for key, value in self.blobs.items():
            if key[0] == thread_id and (key[1] != "" or versions.get(key[2]) == key[3]):
                part.blobs[key] = value
        for outer, inner in self.writes.items():
            if outer[0] == thread_id and (outer[1] != "" or outer[2] == chosen):
                part.writes[outer] = dict(inner)
        return part.export()
