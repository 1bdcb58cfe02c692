"""Payload values end to end: enums, ``to_json``/``from_json`` classes and non-ASCII text through a worker."""

from __future__ import annotations

import enum
from typing import Any

from durabletask import client, task

from .conftest import Hub, unique_id

COMPLETED = client.OrchestrationStatus.COMPLETED


class Light(enum.Enum):
    RED = "red"
    GREEN = "grün"


class Parcel:
    def __init__(self, weight: int) -> None:
        self.weight = weight

    def to_json(self) -> Any:
        return {"grams": self.weight}

    @classmethod
    def from_json(cls, value: Any) -> Parcel:
        return cls(value["grams"])


def pick_light(ctx: task.ActivityContext, name: str) -> Light:
    return Light[name]


def weigh(ctx: task.ActivityContext, parcel: Parcel) -> Parcel:
    # The annotation asks for the class: the hook rebuilds it from the payload.
    assert isinstance(parcel, Parcel)
    return Parcel(parcel.weight * 2)


def lights(ctx: task.OrchestrationContext, names: list[str]) -> Any:
    plain = yield ctx.call_activity(pick_light, input=names[0])
    typed = yield ctx.call_activity(pick_light, input=names[1], return_type=Light)
    parcel = yield ctx.call_activity(weigh, input=Parcel(5), return_type=Parcel)
    assert isinstance(typed, Light) and isinstance(parcel, Parcel)
    ctx.set_custom_status({"light": typed})
    return {"plain": plain, "typed": typed, "grams": parcel.weight, "text": "é"}


def test_an_activity_may_return_an_enum(hub: Hub) -> None:
    hub.start_worker([lights], [pick_light, weigh])
    c = hub.client()
    iid = c.schedule_new_orchestration(lights, input=["RED", "GREEN"], instance_id=unique_id("enum"))
    state = c.wait_for_orchestration_completion(iid, timeout=30)
    assert state is not None and state.runtime_status == COMPLETED, state and state.failure_details
    assert state.serialized_output == '{"plain": "red", "typed": "gr\\u00fcn", "grams": 10, "text": "\\u00e9"}'
    assert state.serialized_custom_status == '{"light": "gr\\u00fcn"}'
    assert state.serialized_input == '["RED", "GREEN"]'
