"""Ingest throughput: records per second through POST /api/v1/ingest/ and the webhook receiver.

    DJANGO_SETTINGS_MODULE=bench.settings \
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/beeos_bench \
    python -m bench.ingest [--batches 20] [--webhooks 1000] [--profile]

In-process through Django's test ``Client`` (middleware, token authentication,
JSON parsing, the services, PostgreSQL): it measures the app and the database,
not an HTTP server. Run it on the loaded database (``bench.load``): every
record goes into tables of a million rows, with their indexes.

Phases (batches of 500, the feeder's realistic mix of kinds):

1. ``new``: ``--batches`` batches of records never seen before;
2. ``duplicate``: the first batches again, byte for byte (all ``unchanged``);
3. ``update``: newer snapshots of the same tasks and operations, with a status
   change (``updated`` + an audit entry each);
4. ``stale``: older snapshots again (all ``stale``/``unchanged``).

Then ``--webhooks`` signed ``task_status`` events, one request each: half move
running tasks of the loaded data to completed, half announce new tasks.

``--profile`` runs one extra batch of new records under cProfile and prints
where the time goes.
"""

from __future__ import annotations

import argparse
import cProfile
import datetime as dt
import hashlib
import hmac
import io
import json
import os
import pstats
import sys
import time
from collections import Counter
from typing import Any

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bench.settings")

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402
from django.contrib.auth.models import User  # noqa: E402
from django.test import Client  # noqa: E402

from beeos_console.core import tokens
from bench.load import FEEDER_USER  # noqa: E402
from tasks.models import Task  # noqa: E402

BATCH = 500
URL = "/api/v1/ingest/"
WEBHOOK_URL = "/api/v1/webhooks/beeos/"
# Per batch of 500: what a feeder pushes (tasks with their replies, operations, events).
MIX = {
    "openapi_task": 150,
    "a2a_task": 50,
    "message": 200,
    "runtime_operation": 50,
    "runtime_operation_event": 50,
}


def iso(value: dt.datetime) -> str:
    return value.isoformat().replace("+00:00", "Z")


class Feed:
    """Wire-shaped snapshots (as in tests/factories.py), unique per run."""

    def __init__(self, run: str) -> None:
        self.run = run
        self.base = dt.datetime.now(dt.UTC).replace(microsecond=0) - dt.timedelta(minutes=30)

    def openapi_task(self, i: int, status: str = "running", later: int = 0) -> dict[str, Any]:
        created = self.base + dt.timedelta(seconds=i % 1800)
        data = {
            "task_id": f"tsk_ing_{self.run}_{i:06d}",
            "agent_id": f"agt_{i % 500:04d}",
            "caller_id": f"usr_{i % 20000:05d}",
            "status": status,
            "created_at": iso(created),
            "started_at": iso(created + dt.timedelta(seconds=1)),
            "updated_at": iso(created + dt.timedelta(seconds=2 + later)),
        }
        if status == "completed":
            data["completed_at"] = data["updated_at"]
            data["result"] = {"text": f"Done {i}."}
        return data

    def a2a_task(self, i: int, state: str = "TASK_STATE_WORKING", later: int = 0) -> dict[str, Any]:
        created = self.base + dt.timedelta(seconds=i % 1800)
        return {
            "id": f"a2a-ing-{self.run}-{i:06d}",
            "contextId": f"ctx_ing_{self.run}_{i:06d}",
            "status": {"state": state, "timestamp": iso(created + dt.timedelta(seconds=later))},
            "target_agent_id": f"agt_{i % 500:04d}",
            "caller_agent_id": "agt_caller_001",
        }

    def message(self, i: int, task_no: int) -> dict[str, Any]:
        created = self.base + dt.timedelta(seconds=task_no % 1800 + 3 + i % 3)
        return {
            "id": f"msg_ing_{self.run}_{i:06d}",
            "conversation_id": f"tsk_ing_{self.run}_{task_no:06d}",
            "type": "agent_reply" if i % 3 else "chat_message",
            "sender": f"agt_{task_no % 500:04d}",
            "body": f"Reply {i} about ticket {task_no}.",
            "state": "streaming" if i % 3 else "completed",
            "stop_reason": "" if i % 3 else "end_turn",
            "created_at": iso(created),
        }

    def operation(self, i: int, status: str = "running", sequence: int = 2) -> dict[str, Any]:
        created = self.base + dt.timedelta(seconds=i % 1800)
        return {
            "id": f"op_ing_{self.run}_{i:06d}",
            "instanceId": f"ins_{i % 200:04d}",
            "target": {"scope": "agent", "platformAgentId": f"agt_{i % 500:04d}"},
            "method": "session/set_model",
            "capability": "conversation.control",
            "transport": "service",
            "sequence": str(sequence),
            "createdAt": iso(created),
            "updatedAt": iso(created + dt.timedelta(seconds=sequence)),
            "status": status,
            "effectState": {"running": "running", "queued": "queued"}.get(status, "committed"),
            "terminal": status not in ("queued", "running"),
            **(
                {"projection": {"revision": "1", "state": "synced"}}
                if status == "succeeded"
                else {}
            ),
        }

    def event(self, i: int, op_no: int) -> dict[str, Any]:
        return {
            "id": str(10_000 + i),
            "operationId": f"op_ing_{self.run}_{op_no:06d}",
            "method": "session/set_model",
            "event": {
                "type": "runtime_operation_progress",
                "sequence": str(1 + i % 3),
                "recordedAt": iso(self.base + dt.timedelta(seconds=op_no % 1800 + i % 3)),
            },
        }

    def new_batch(self, b: int) -> list[dict[str, Any]]:
        records: list[dict[str, Any]] = []
        t0, o0 = b * MIX["openapi_task"], b * MIX["runtime_operation"]
        for k in range(MIX["openapi_task"]):
            records.append({"kind": "openapi_task", "data": self.openapi_task(t0 + k)})
        for k in range(MIX["a2a_task"]):
            n = b * MIX["a2a_task"] + k
            records.append({"kind": "a2a_task", "data": self.a2a_task(n)})
        for k in range(MIX["message"]):
            n = b * MIX["message"] + k
            records.append({"kind": "message", "data": self.message(n, t0 + k % 150)})
        for k in range(MIX["runtime_operation"]):
            records.append({"kind": "runtime_operation", "data": self.operation(o0 + k)})
        for k in range(MIX["runtime_operation_event"]):
            n = b * MIX["runtime_operation_event"] + k
            records.append({"kind": "runtime_operation_event", "data": self.event(n, o0 + k)})
        return records

    def update_batch(self, b: int) -> list[dict[str, Any]]:
        """Newer snapshots with a status change, for the tasks and operations of batch ``b``."""
        records: list[dict[str, Any]] = []
        t0, o0 = b * MIX["openapi_task"], b * MIX["runtime_operation"]
        for k in range(MIX["openapi_task"] * 2):  # 300 task updates (two batches' worth)
            n = t0 + k
            records.append(
                {"kind": "openapi_task", "data": self.openapi_task(n, "completed", later=60)}
            )
        for k in range(MIX["a2a_task"] * 2):
            n = b * MIX["a2a_task"] + k
            records.append(
                {"kind": "a2a_task", "data": self.a2a_task(n, "TASK_STATE_COMPLETED", later=60)}
            )
        for k in range(MIX["runtime_operation"] * 2):
            records.append(
                {"kind": "runtime_operation", "data": self.operation(o0 + k, "succeeded", 5)}
            )
        return records


def post(client: Client, key: str, records: list[dict[str, Any]]) -> Counter:
    body = json.dumps({"records": records})
    response = client.post(
        URL, data=body, content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {key}"
    )
    if response.status_code != 200:
        sys.exit(f"ingest answered {response.status_code}: {response.content[:500]!r}")
    return Counter(r["result"] for r in response.json()["results"])


def timed(label: str, client: Client, key: str, batches: list[list[dict]]) -> dict[str, Any]:
    outcomes: Counter = Counter()
    per_batch = []
    started = time.perf_counter()
    for records in batches:
        t0 = time.perf_counter()
        outcomes += post(client, key, records)
        per_batch.append(time.perf_counter() - t0)
    elapsed = time.perf_counter() - started
    n = sum(len(b) for b in batches)
    rate = n / elapsed if elapsed else 0.0
    print(
        f"  {label:10} {n:6,} records in {elapsed:6.2f} s = {rate:7,.0f} records/s "
        f"(median batch {sorted(per_batch)[len(per_batch) // 2] * 1000:.0f} ms)  {dict(outcomes)}"
    )
    return {"phase": label, "records": n, "seconds": elapsed, "rate": rate, **outcomes}


def sign(body: bytes) -> dict[str, str]:
    ts = str(int(time.time()))
    secret = settings.BEEOS_WEBHOOK_SECRET.encode()
    mac = hmac.new(secret, ts.encode() + b"." + body, hashlib.sha256).hexdigest()
    return {"HTTP_X_BEEOS_SIGNATURE": f"t={ts},v1={mac}"}


def webhooks(client: Client, feed: Feed, count: int) -> dict[str, Any]:
    """Signed task_status events, one request each: half update loaded tasks, half are new."""
    running = list(
        Task.objects.filter(protocol="openapi", raw_state="running")
        .order_by("-created_at")
        .values_list("task_id", flat=True)[: count // 2]
    )
    bodies = []
    stamp = iso(dt.datetime.now(dt.UTC))
    for task_id in running:
        bodies.append({"task_id": task_id, "status": "completed"})
    for i in range(count - len(running)):
        bodies.append({"task_id": f"tsk_hook_{feed.run}_{i:06d}", "status": "running"})
    outcomes: Counter = Counter()
    started = time.perf_counter()
    for payload in bodies:
        body = json.dumps(
            {
                "type": "task_status",
                "context_id": payload["task_id"],
                "final": payload["status"] == "completed",
                "timestamp": stamp,
                **payload,
            }
        ).encode()
        response = client.generic(
            "POST", WEBHOOK_URL, body, content_type="application/json", **sign(body)
        )
        if response.status_code != 200:
            sys.exit(f"webhook answered {response.status_code}: {response.content[:300]!r}")
        outcomes[response.json()["result"]] += 1
    elapsed = time.perf_counter() - started
    rate = len(bodies) / elapsed if elapsed else 0.0
    print(
        f"  webhooks   {len(bodies):6,} events  in {elapsed:6.2f} s = {rate:7,.0f} records/s "
        f"({elapsed / len(bodies) * 1000:.1f} ms each)  {dict(outcomes)}"
    )
    return {"phase": "webhook", "records": len(bodies), "seconds": elapsed, "rate": rate}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, default=20)
    parser.add_argument("--repeat-batches", type=int, default=4, help="duplicate/update/stale")
    parser.add_argument("--webhooks", type=int, default=1000)
    parser.add_argument(
        "--profile",
        nargs="?",
        const="new",
        choices=["new", "update"],
        help="profile one more batch of new records (default) or of updates",
    )
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args()

    feeder = User.objects.get(username=FEEDER_USER)
    _, key = tokens.issue(feeder, "bench")
    client = Client()
    feed = Feed(run=dt.datetime.now(dt.UTC).strftime("%H%M%S"))
    print(f"database {settings.DATABASES['default']['NAME']}, batches of {BATCH}, run {feed.run}")
    print(f"  mix per batch: {MIX}")

    post(client, key, feed.new_batch(10_000)[:50])  # warm-up (connection, imports)
    batches = [feed.new_batch(b) for b in range(args.batches)]
    r = args.repeat_batches
    results = [
        timed("new", client, key, batches),
        timed("duplicate", client, key, batches[:r]),
        timed(
            "update",
            client,
            key,
            [feed.update_batch(2 * b) for b in range(min(r, args.batches // 2))],
        ),
        timed("stale", client, key, batches[:r]),
    ]
    results.append(webhooks(client, feed, args.webhooks))
    total = sum(x["records"] for x in results[:4])
    seconds = sum(x["seconds"] for x in results[:4])
    print(f"  ingest API overall: {total:,} records, {total / seconds:,.0f} records/s")

    if args.profile:
        profiler = cProfile.Profile()
        extra = feed.new_batch(20_000)
        if args.profile == "update":
            # The records to update (update_batch(b) covers batches b and b + 1), then
            # their newer snapshots.
            post(client, key, extra)
            post(client, key, feed.new_batch(20_001))
            extra = feed.update_batch(20_000)
        profiler.enable()
        post(client, key, extra)
        profiler.disable()
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(35)
        print(out.getvalue())
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(20)
        print(out.getvalue())
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(results, fh, indent=2, default=str)


if __name__ == "__main__":
    main()
