"""An orchestrator's stream output: items of the current turn, sent as one entity signal when the turn commits."""

from __future__ import annotations

import json
import re
from datetime import datetime
from typing import Any

from durabletask._codec import Codec
from durabletask._proto import orchestrator_service_pb2 as pb
from durabletask._streams import wire

_NUMBER = re.compile(r'\{"s":(\d+),')


class TurnStream:
    """Collects what the orchestrator publishes in the current turn, and counts the batches already recorded.

    Publishing while replaying does nothing: those items went out with the turn that first ran that code. The
    items of a live turn become a single ``signalEntity`` action to the instance's stream head, emitted with the
    turn's other actions, so they are stored if and only if the turn commits.
    """

    __slots__ = ("_bytes", "_entries", "execution_id", "recorded")

    def __init__(self) -> None:
        self._entries: list[list[Any]] = []
        self._bytes = 0
        #: The number of the last batch of this execution recorded in history (or sent by a kept session).
        self.recorded = 0
        self.execution_id = ""

    def publish(self, codec: Codec, value: Any, topic: str, now: datetime) -> None:
        entry = wire.encode_item(codec, value, topic, now)
        size = wire.entry_size(entry)
        if self._bytes + size > wire.MAX_TURN_BYTES:
            raise ValueError(
                f"publish: this turn has published {self._bytes} bytes and the item on topic {topic!r} adds {size}, "
                f"over the limit of {wire.MAX_TURN_BYTES} bytes per orchestrator turn (they travel in one signal); "
                "publish less per turn, or publish from an activity"
            )
        self._entries.append(entry)
        self._bytes += size

    def on_recorded(self, encoded_input: str) -> None:
        """A batch of an earlier turn, met in history."""
        match = _NUMBER.match(encoded_input)
        self.recorded = max(self.recorded, int(match.group(1))) if match else self.recorded + 1

    def action(self, instance_id: str) -> pb.OrchestratorAction | None:
        """The turn's signal (``None`` if the turn published nothing); the turn's items are then handed over."""
        if not self._entries:
            return None
        self.recorded += 1
        batch = wire.orchestrator_batch(self.execution_id, self.recorded, self._entries)
        self._entries = []
        self._bytes = 0
        out = pb.OrchestratorAction(id=wire.ORCHESTRATOR_ACTION_ID)
        signaled = out.sendEntityMessage.entityOperationSignaled
        signaled.requestId = wire.signal_request_id(instance_id, self.execution_id, self.recorded)
        signaled.operation = wire.APPEND
        signaled.targetInstanceId.value = str(wire.head_entity(instance_id))
        signaled.input.value = json.dumps(batch, separators=(",", ":"))
        return out
