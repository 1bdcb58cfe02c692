"""Paging: the last page carries no continuation token, and no query reads more than a capped page."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from google.protobuf import wrappers_pb2

from dtscale_emulator.engine import queries
from dtscale_emulator.server import EmulatorServer
from dtscale_emulator.storage import EntityRecord, InstanceRecord
from durabletask._proto import orchestrator_service_pb2 as pb

from .conftest import HubStub, peer_env, sv, uid

SCRIPT = Path(__file__).parent / "peer" / "paging.py"
HUB = "paging"


def _seed(server: EmulatorServer, prefix: str, count: int, entity_prefix: str | None = None) -> list[str]:
    ids = [f"{prefix}{i}" for i in range(count)]
    with server.backend.transaction() as tx:
        for iid in ids:
            tx.put_instance(
                InstanceRecord(HUB, iid, "e", "Done", pb.ORCHESTRATION_STATUS_COMPLETED, 1, 2, completed_at=2)
            )
        for i in range(count if entity_prefix else 0):
            tx.put_entity(EntityRecord(HUB, f"{entity_prefix}{i}", "1", 1))
    return ids


@pytest.fixture
def paging_server() -> Iterator[EmulatorServer]:
    with EmulatorServer(port=0, in_memory=True, task_hubs=(HUB,)) as server:
        yield server


@pytest.fixture
def hub(paging_server: EmulatorServer) -> Iterator[HubStub]:
    with grpc.insecure_channel(paging_server.address) as channel:
        yield HubStub(channel, HUB)


def test_a_full_last_page_has_no_continuation_token(paging_server: EmulatorServer, hub: HubStub) -> None:
    prefix = uid("p") + "-"
    ids = _seed(paging_server, prefix, 4, "@counter@" + prefix)
    query = pb.InstanceQuery(instanceIdPrefix=sv(prefix), maxInstanceCount=2)
    first = hub.QueryInstances(pb.QueryInstancesRequest(query=query))
    assert [s.instanceId for s in first.orchestrationState] == ids[:2] and first.HasField("continuationToken")
    query.continuationToken.CopyFrom(first.continuationToken)
    last = hub.QueryInstances(pb.QueryInstancesRequest(query=query))
    assert [s.instanceId for s in last.orchestrationState] == ids[2:]
    assert not last.HasField("continuationToken")

    listed = hub.ListInstanceIds(pb.ListInstanceIdsRequest(pageSize=2))
    rest = hub.ListInstanceIds(pb.ListInstanceIdsRequest(pageSize=2, lastInstanceKey=listed.lastInstanceKey))
    assert list(listed.instanceIds) + list(rest.instanceIds) == ids
    assert not rest.HasField("lastInstanceKey")

    entity_query = pb.EntityQuery(
        instanceIdStartsWith=sv("@counter@" + prefix), pageSize=wrappers_pb2.Int32Value(value=2)
    )
    page = hub.QueryEntities(pb.QueryEntitiesRequest(query=entity_query))
    entity_query.continuationToken.CopyFrom(page.continuationToken)
    final = hub.QueryEntities(pb.QueryEntitiesRequest(query=entity_query))
    assert len(page.entities) == len(final.entities) == 2 and not final.HasField("continuationToken")


def test_page_sizes_are_capped_and_the_continuation_reaches_everything(
    paging_server: EmulatorServer, hub: HubStub, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(queries, "MAX_PAGE", 3)
    prefix = uid("cap") + "-"
    ids = _seed(paging_server, prefix, 7, "@counter@" + prefix)
    seen: list[str] = []
    token: wrappers_pb2.StringValue | None = None
    sizes = []
    while True:
        query = pb.InstanceQuery(instanceIdPrefix=sv(prefix), maxInstanceCount=(1 << 31) - 1, continuationToken=token)
        page = hub.QueryInstances(pb.QueryInstancesRequest(query=query))
        sizes.append(len(page.orchestrationState))
        seen += [s.instanceId for s in page.orchestrationState]
        if not page.HasField("continuationToken"):
            break
        token = page.continuationToken
    assert sizes == [3, 3, 1] and seen == ids

    listed = hub.ListInstanceIds(pb.ListInstanceIdsRequest(pageSize=(1 << 31) - 1))
    assert len(listed.instanceIds) == 3 and listed.lastInstanceKey.value == ids[2]
    entities = hub.QueryEntities(
        pb.QueryEntitiesRequest(query=pb.EntityQuery(pageSize=wrappers_pb2.Int32Value(value=(1 << 31) - 1)))
    )
    assert len(entities.entities) == 3 and entities.HasField("continuationToken")


def _rpc_counts(python: str, server: EmulatorServer, env: dict[str, str] | None) -> dict[str, object]:
    prefix = uid("sdk") + "-"
    _seed(server, prefix, 4, f"@counter@{prefix}")
    proc = subprocess.run(
        [python, str(SCRIPT), server.address, HUB, prefix, f"@counter@{prefix}"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        cwd=SCRIPT.parent,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.splitlines()[-1])  # type: ignore[no-any-return]


# Both SDKs against our emulator: four items in pages of two take two calls, never a third that comes back empty.
EXPECTED_CALLS = {
    "instances": 4,
    "query_calls": 2,
    "instances_default_page": 4,
    "default_page_calls": 1,
    "entities": 4,
    "entity_calls": 2,
    "entity_ids": True,
}


def test_our_sdk_pages_without_an_extra_round_trip() -> None:
    with EmulatorServer(port=0, in_memory=True, task_hubs=(HUB,)) as server:
        counts = _rpc_counts(sys.executable, server, None)
    assert {k: counts[k] for k in EXPECTED_CALLS} == EXPECTED_CALLS
    assert counts["id_pages"] == [2, 2] and counts["id_calls"] == 2


@pytest.mark.interop
def test_microsofts_sdk_pages_our_emulator_the_same_way(peer_py: Path) -> None:
    with EmulatorServer(port=0, in_memory=True, task_hubs=(HUB,)) as server:
        counts = _rpc_counts(str(peer_py), server, peer_env())
    assert {k: counts[k] for k in EXPECTED_CALLS} == EXPECTED_CALLS
    assert counts["id_pages"] == [2, 2] and counts["id_calls"] == 2
