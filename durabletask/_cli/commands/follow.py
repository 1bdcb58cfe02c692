"""``durabletask follow ID``: print an instance's stream items as they arrive, like ``tail -f``."""

from __future__ import annotations

import argparse
import json
from typing import Any

from durabletask import client as dt_client
from durabletask._cli.render import Renderer
from durabletask._streams.wire import StreamItem


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("follow", help="print an instance's published items as they arrive, until it ends")
    p.add_argument("instance_id", help="the orchestration instance ID")
    p.add_argument("--topic", action="append", dest="topics", metavar="TOPIC", help="only this topic (repeatable)")
    p.add_argument("--after", metavar="CURSOR", help="start after this item id (from an earlier follow)")
    p.add_argument("--timeout", type=float, help="give up after this many seconds (default: wait until it ends)")


def _text(item: StreamItem) -> str:
    source = "" if item.task_id is None else f" [task {item.task_id} attempt {item.attempt}]"
    data = json.dumps(item.data, default=str, ensure_ascii=False)
    return f"{item.time.strftime('%H:%M:%S.%f')[:-3]} {item.topic}{source} {data}  ({item.id})"


def _record(item: StreamItem) -> dict[str, Any]:
    return {
        "id": item.id,
        "topic": item.topic,
        "data": item.data,
        "time": item.time.isoformat(),
        "task_id": item.task_id,
        "attempt": item.attempt,
    }


def cmd_follow(c: dt_client.TaskHubGrpcClient, a: argparse.Namespace, r: Renderer) -> int:
    """One line per item (one JSON object per line with ``--json``), flushed as each arrives."""
    for item in c.subscribe(a.instance_id, topics=a.topics, after=a.after, timeout=a.timeout):
        if r.as_json:
            r.out.write(json.dumps(_record(item), default=str, sort_keys=True) + "\n")
        else:
            r.line(_text(item))
        r.out.flush()
    return 0
