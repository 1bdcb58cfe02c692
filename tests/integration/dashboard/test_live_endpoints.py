"""The instance page's running activities and stream endpoint over real HTTP, with a real worker producing them.

The dashboard reads what the SDK wrote; the SDK's own readers (``durabletask get``'s running activities and
``client.subscribe``) read the same instance, and both must agree. Hostile query parameters get a 400 naming the
parameter and its limit; unknown instances a 404.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import pytest

from dtscale_emulator.dashboard import streams
from durabletask._cli.activities import running_attempts
from tests.integration.dashboard.producing import CAP, TIMEOUTS, Producing, producing

T = TypeVar("T")


@pytest.fixture(scope="module")
def live() -> Iterator[Producing]:
    with producing() as p:
        yield p


def get(p: Producing, path: str, **query: str) -> tuple[int, Any]:
    url = f"{p.url}api/hubs/default/{path}?{urllib.parse.urlencode(query)}"
    try:
        with urllib.request.urlopen(url, timeout=60) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def until(read: Callable[[], T], done: Callable[[T], bool], what: str) -> T:
    """Reads until ``done`` holds (the worker works on its own threads); fails after a generous bound."""
    deadline = time.monotonic() + 60
    while True:
        found = read()
        if done(found):
            return found
        assert time.monotonic() < deadline, f"never saw {what}: last {found!r}"
        time.sleep(0.05)


def walk(p: Producing, instance_id: str, limit: int) -> list[dict[str, Any]]:
    """Every item from the start, page by page, as the page reads on from its cursor."""
    found: list[dict[str, Any]] = []
    query = {"id": instance_id, "limit": str(limit)}
    while True:
        status, page = get(p, "stream", **query)
        assert status == 200, page
        assert len(page["items"]) <= limit
        found.extend(page["items"])
        if not page["more"]:
            return found
        query["after"] = page["next"]


def test_running_activity_shows_its_timeouts_and_last_heartbeat_as_durabletask_get_does(live: Producing) -> None:
    instance_id = live.start("activities-1")
    live.beat(instance_id, {"page": 7, "note": "<i>x</i>"})

    def activities() -> list[dict[str, Any]]:
        return list(get(live, "instance", id=instance_id)[1]["activities"])

    (shown,) = until(activities, lambda a: len(a) == 1 and a[0]["last_heartbeat_details"] is not None, "a heartbeat")
    assert shown["name"] == "produce" and shown["attempt"] == 1
    assert shown["timeouts"] == TIMEOUTS
    assert json.loads(shown["last_heartbeat_details"]) == {"page": 7, "note": "<i>x</i>"}
    (cli,) = running_attempts(live.client.get_orchestration_history(instance_id))
    assert (shown["task_id"], shown["timeouts"]) == (cli.task_id, cli.timeouts)
    assert cli.started_at is not None and cli.last_heartbeat_at is not None
    assert (shown["started_at"], shown["last_heartbeat_at"]) == (
        cli.started_at.isoformat(),
        cli.last_heartbeat_at.isoformat(),
    )
    live.finish(instance_id)
    assert get(live, "instance", id=instance_id)[1]["activities"] == []  # it ended: nothing runs


def test_stream_pages_give_exactly_what_a_subscriber_gets(live: Producing) -> None:
    instance_id = live.start("stream-1")
    live.publish(instance_id, [("tokens", {"n": n}) for n in range(30)])
    live.publish(instance_id, [("tools", "<script>alert(1)</script>"), ("tokens", "x" * 5000)])
    live.finish(instance_id)
    subscribed = list(live.client.subscribe(instance_id, timeout=60))
    assert len(subscribed) == 34
    for limit in (4, 500):
        pages = walk(live, instance_id, limit)
        assert [i["id"] for i in pages] == [i.id for i in subscribed]
        assert [(i["topic"], i["task_id"], i["attempt"]) for i in pages] == [
            (i.topic, i.task_id, i.attempt) for i in subscribed
        ]
        for mine, theirs in zip(pages, subscribed, strict=True):
            if not mine["truncated"]:
                assert json.loads(mine["data"]) == theirs.data
    (long,) = [i for i in walk(live, instance_id, 500) if i["truncated"]]
    assert long["data_length"] == 5002 and len(long["data"]) == streams.MAX_DATA_CHARS
    status, tail = get(live, "stream", id=instance_id, tail="3")
    assert status == 200 and [i["id"] for i in tail["items"]] == [i.id for i in subscribed[-3:]]
    assert tail["skipped"] == 31 and tail["status"] == "COMPLETED"
    status, after = get(live, "stream", id=instance_id, after=subscribed[-1].id)
    assert (status, after["items"], after["more"], after["next"]) == (200, [], False, subscribed[-1].id)


def test_items_over_the_retention_cap_show_the_dropped_marker_first(live: Producing) -> None:
    instance_id = live.start("capped-1")
    filler = "z" * 2000
    live.publish(instance_id, [("bulk", {"n": n, "pad": filler}) for n in range(3 * CAP // 2000)])
    live.finish(instance_id)
    subscribed = list(live.client.subscribe(instance_id, timeout=60))
    assert subscribed[0].topic == "$dropped"
    pages = walk(live, instance_id, 50)
    assert [i["id"] for i in pages] == [i.id for i in subscribed]
    assert json.loads(pages[0]["data"])["dropped"] == subscribed[0].data["dropped"]


def test_an_instance_that_never_published_has_an_empty_stream(live: Producing) -> None:
    instance_id = live.client.schedule_new_orchestration("nobody_runs_this")
    status, page = get(live, "stream", id=instance_id)
    assert status == 200
    assert (page["items"], page["next"], page["more"], page["newest"]) == ([], None, False, None)


@pytest.mark.adversarial
@pytest.mark.parametrize(
    ("query", "message"),
    [
        ({}, "id is required"),
        ({"id": "   "}, "id is required"),
        ({"after": "nonsense"}, "after: 'nonsense' is not a stream cursor"),
        ({"after": "000000000001-zzzzzzzz"}, "belongs to another instance"),
        ({"after": "x" * 5000}, "after: 'xxxxxxxx"),
        ({"after": "-1"}, "is not a stream cursor"),
        ({"limit": "0"}, "limit must be between 1 and 500, not 0"),
        ({"limit": "501"}, "limit must be between 1 and 500, not 501"),
        ({"limit": "9" * 400}, "limit must be a whole number between 1 and 500"),
        ({"limit": "-5"}, "limit must be a whole number between 1 and 500"),
        ({"limit": "1e3"}, "limit must be a whole number between 1 and 500"),
        ({"tail": "100000"}, "tail must be between 1 and 500, not 100000"),
        ({"tail": "5", "after": "000000000001-zzzzzzzz"}, "after and tail: give one of them, not both"),
    ],
)
def test_bad_stream_queries_are_refused_naming_the_parameter_and_its_limit(
    live: Producing, query: dict[str, str], message: str
) -> None:
    asked = {"id": "stream-bad", **query} if "id" in query or query else {}
    status, answer = get(live, "stream", **asked)
    assert status == 400, answer
    assert message in answer["error"]
    assert len(answer["error"]) < 300  # a huge input is not echoed back whole


@pytest.mark.adversarial
@pytest.mark.parametrize(
    "instance_id", ["no-such-instance", "<script>alert(1)</script>", "../../etc/passwd", "é" * 100]
)
def test_an_unknown_instance_is_a_404_naming_it(live: Producing, instance_id: str) -> None:
    status, answer = get(live, "stream", id=instance_id)
    assert status == 404
    assert answer["error"] == f"no instance {instance_id!r} in task hub 'default'"


@pytest.mark.adversarial
def test_an_unknown_hub_is_a_404(live: Producing) -> None:
    url = f"{live.url}api/hubs/nope/stream?id=x"
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(url, timeout=60)
    assert refused.value.code == 404
    assert "nope" in json.loads(refused.value.read())["error"]


@pytest.mark.adversarial
def test_the_stream_live_feed_of_an_unknown_instance_reports_the_problem(live: Producing) -> None:
    url = f"{live.url}api/hubs/default/live?view=stream&id=ghost"
    with urllib.request.urlopen(url, timeout=60) as answer:
        assert answer.headers["Content-Type"].startswith("text/event-stream")
        assert answer.readline() == b"event: problem\n"
        assert b"no instance 'ghost'" in answer.readline()


@pytest.mark.adversarial
def test_an_instance_id_over_the_backends_limit_gets_the_backends_reason(live: Producing) -> None:
    status, answer = get(live, "stream", id="é" * 300)
    assert (status, answer["error"]) == (400, "INVALID_ARGUMENT: instanceId is 300 characters; the limit is 100")
