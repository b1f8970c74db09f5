"""A sync pass costs what changed, not what is open (issue #16, point 3).

Against the stand-in over real HTTP (``beeos_sdk``), with every request counted by the
stand-in itself (``BeeOSStandIn.calls``, per route), never by the client: a pass with
nothing changed makes a fixed number of calls whatever the number of open objects, and
each change adds the documented few reads.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import io
import json
import re
import time
import uuid

import pytest
from django.core.management import call_command
from django.db import connection

from beeos_console.upstream import inbox, sync
from beeos_console.upstream.models import SyncCursor
from operations.models import RuntimeOperation
from operations.services.rules import new_operation
from operations.services.snapshots import parse_operation_snapshot
from tasks.models import Task
from tasks.services.rules import new_task
from tasks.services.snapshots import parse_openapi_task
from tests.standin import BeeOSStandIn
from tests.standin.contract import wire

pytestmark = pytest.mark.django_db

API_KEY = "oag_sync_cost_key"
AGENT = "agent_cost"
INSTANCE = "inst_cost"
T0 = dt.datetime(2026, 11, 1, 12, 0, tzinfo=dt.UTC)
WEBHOOK_SECRET = "whsec_" + "c" * 40
# Open tasks and active operations: ten task pages, five operation pages, the sweep's
# 50 passes to go round. The cost of a pass must not depend on it (bench/sync_cost.py
# measures the same passes at 10,000).
OPEN = 1_000
# A task deep in the list (page 6 of 10), far from the sweep's first passes.
DEEP = f"task_{OPEN // 2:05d}"
SWEEP = 20
SUMMARY = re.compile(r"^sync pass \d+ done in [\d.]+ s: (.*)$", re.MULTILINE)


@pytest.fixture
def standin(settings):
    with BeeOSStandIn(api_key=API_KEY) as server:
        settings.BEEOS_API_URL = server.url
        settings.BEEOS_API_KEY = API_KEY
        settings.BEEOS_CLOUD_URL = ""
        settings.BEEOS_INSTANCES = [INSTANCE]
        settings.BEEOS_SYNC_SWEEP = SWEEP
        settings.BEEOS_WEBHOOK_SECRET = WEBHOOK_SECRET
        server.add_instance(INSTANCE)
        yield server
    assert server.errors == []


def at(i: int) -> dt.datetime:
    return T0 + dt.timedelta(seconds=i)


def sync_pass(server: BeeOSStandIn) -> tuple[dict[str, int], dict[str, int]]:
    """One ``sync_beeos --once``: the requests the stand-in received, and the summary."""
    server.clear_requests()
    out = io.StringIO()
    call_command("sync_beeos", "--once", stdout=out, stderr=io.StringIO())
    (counts,) = SUMMARY.findall(out.getvalue())
    summary = {k: int(v) for k, v in (part.rsplit(" ", 1) for part in counts.split(", "))}
    assert summary["errors"] == 0, out.getvalue()
    return dict(server.calls), summary


def plus(base: dict[str, int], **more: int) -> dict[str, int]:
    total = dict(base)
    for route, n in more.items():
        total[route] = total.get(route, 0) + n
    return total


def seed_open_work(server: BeeOSStandIn, tasks: int, operations: int) -> list[str]:
    """Open tasks and active operations upstream, and the mirror as a finished sync left
    them: the rows the write path makes of the very snapshots BeeOS serves (``new_task``,
    ``new_operation``), inserted in bulk. The operation ids, oldest first."""
    task_rows = [
        server.add_task(f"task_{i:05d}", agent_id=AGENT, status="running", created_at=at(i))
        for i in range(tasks)
    ]
    op_rows = (
        server.add_operations(operations, instance_id=INSTANCE, created_at=at(0))
        if operations
        else []
    )
    Task.objects.bulk_create(
        [new_task(parse_openapi_task(wire(t))) for t in task_rows], batch_size=2000
    )
    RuntimeOperation.objects.bulk_create(
        [new_operation(parse_operation_snapshot(wire(op))) for op in op_rows], batch_size=2000
    )
    # Planner statistics for what was just loaded, as autovacuum gives them after such a
    # load. Without them, the statistics an earlier test left on these tables could make
    # PostgreSQL look up 200 ids at a time through the trigram index's pending list:
    # 0.6 s a lookup, 8 s for the test, in some runs of the whole suite.
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {Task._meta.db_table}, {RuntimeOperation._meta.db_table}")
    return [op.id for op in op_rows]


def post_webhook(client, payload: dict) -> None:
    body = json.dumps(payload).encode()
    ts = str(int(time.time()))
    mac = hmac.new(WEBHOOK_SECRET.encode(), ts.encode() + b"." + body, hashlib.sha256)
    response = client.generic(
        "POST",
        "/api/v1/webhooks/beeos/",
        body,
        content_type="application/json",
        HTTP_X_BEEOS_SIGNATURE=f"t={ts},v1={mac.hexdigest()}",
    )
    assert response.status_code == 200, response.content


def test_with_1000_open_tasks_and_operations_a_pass_costs_what_changed(standin, client, settings):
    op_ids = seed_open_work(standin, OPEN, OPEN)
    assert Task.objects.filter(status="processing").count() == OPEN
    assert RuntimeOperation.objects.filter(status="processing").count() == OPEN

    # The first pass finds the mirror up to date; it lists the active operations once
    # from the start (no cursor yet) and keeps the cursor of the last page.
    calls, summary = sync_pass(standin)
    assert calls["list_operations"] == OPEN // sync.OPERATION_PAGE
    assert summary["created"] == summary["updated"] == 0

    # Nothing changed: 1 task list page + the sweep's 20 getTask, 1 page of the active
    # operations (the last one, again) + the sweep's 20 getRuntimeOperation. 42 calls.
    base = {"list_user_tasks": 1, "get_task": SWEEP, "list_operations": 1, "get_operation": SWEEP}
    calls, summary = sync_pass(standin)
    assert calls == base
    assert sum(calls.values()) == 42
    assert (summary["created"], summary["updated"]) == (0, 0)
    assert summary["unchanged"] == 2 * SWEEP + sync.OPERATION_PAGE  # the overlap page too

    # A task ends deep in the list; its webhook flags it (a TaskEvent carries no result):
    # one getTask and one page of its messages more, nothing else.
    standin.set_task_status(DEEP, "completed", result={"pages": 312})
    standin.add_message(DEEP, body="Indexed 312 pages.", publisher_id="agent:cost")
    post_webhook(
        client,
        {
            "type": "task_status",
            "task_id": DEEP,
            "status": "completed",
            "final": True,
            "timestamp": "2026-11-02T08:00:00.000Z",
        },
    )
    inbox.drain()
    flagged = Task.objects.get(task_id=DEEP)
    assert (flagged.status, flagged.result, flagged.resync_requested_at is not None) == (
        "completed",
        None,
        True,
    )
    calls, summary = sync_pass(standin)
    assert calls == plus(base, get_task=1, list_task_messages=1)
    assert len(standin.requests_to("GET", f"/api/v1/agents/{AGENT}/tasks/{DEEP}")) == 1
    task = Task.objects.get(task_id=DEEP)
    assert (task.result, task.resync_requested_at) == ({"pages": 312}, None)
    assert task.messages.get().body == "Indexed 312 pages."

    # The next pass is back to the base cost: the flag was answered.
    calls, _ = sync_pass(standin)
    assert calls == base

    # An operation on the newest page changes in place (still active): its snapshot came
    # with the page, so only its event stream is read.
    newest = op_ids[-1]
    standin.set_operation_status(newest, "runtime_committed")
    standin.add_event(newest, "runtime_effect_committed")
    calls, summary = sync_pass(standin)
    assert calls == plus(base, stream_operation_events=1)
    assert RuntimeOperation.objects.get(operation_id=newest).raw_status == "runtime_committed"
    assert summary["updated"] == 1

    # One near the newest ends: it leaves the active list, so it is read to learn how.
    ended = op_ids[-2]
    standin.set_operation_status(ended, "succeeded", result={"ok": True})
    calls, summary = sync_pass(standin)
    assert calls == plus(base, get_operation=1, stream_operation_events=1)
    done = RuntimeOperation.objects.get(operation_id=ended)
    assert (done.raw_status, done.status, done.terminal) == ("succeeded", "completed", True)

    # A new task upstream: on the first page, so the walk also reads the next (overlap) page.
    standin.add_task("task_new", agent_id=AGENT, status="queued", created_at=at(OPEN + 1))
    calls, summary = sync_pass(standin)
    assert calls == plus(base, list_user_tasks=1, get_task=1, list_task_messages=1)
    assert Task.objects.get(task_id="task_new").status == "queued"

    # Without the sweep, nothing changed costs exactly two calls.
    settings.BEEOS_SYNC_SWEEP = 0
    calls, _ = sync_pass(standin)
    assert calls == {"list_user_tasks": 1, "list_operations": 1}


def test_the_sweep_finds_an_unflagged_change_deep_in_the_list_within_open_by_sweep_passes(
    standin, settings, monkeypatch
):
    """No webhook and the list row still says ``active``: the sweep reads open tasks a
    few per pass in turn, so the change is found within ceil(open / sweep) passes."""
    monkeypatch.setattr(sync, "TASK_PAGE", 3)
    settings.BEEOS_SYNC_SWEEP = 2
    settings.BEEOS_INSTANCES = []
    seed_open_work(standin, 9, 0)
    standin.set_task_status("task_00004", "input_required")

    passes = 0
    while Task.objects.get(task_id="task_00004").raw_state != "input_required":
        passes += 1
        assert passes <= 5, "not found within ceil(9 / 2) passes"
        calls, _ = sync_pass(standin)
        swept = calls.pop("get_task")
        assert swept == 2
        assert calls in ({"list_user_tasks": 1}, {"list_user_tasks": 1, "list_task_messages": 1})
    task = Task.objects.get(task_id="task_00004")
    assert (task.status, task.reason) == ("processing", "input_required")


def test_a_task_read_that_failed_on_an_older_page_is_read_by_the_next_pass(
    standin, settings, monkeypatch
):
    """The first pass walks 3 pages; getTask fails for a task on page 2. The walk keeps
    that page's cursor, so the next pass walks from there (and from the top)."""
    monkeypatch.setattr(sync, "TASK_PAGE", 3)
    settings.BEEOS_INSTANCES = []
    settings.BEEOS_SYNC_SWEEP = 0
    for i in range(9):
        standin.add_task(f"task_{i}", agent_id=AGENT, status="completed", created_at=at(i))
    standin.fail(f"/api/v1/agents/{AGENT}/tasks/task_4", 503)

    out = io.StringIO()
    with pytest.raises(Exception, match="1 upstream errors"):
        call_command("sync_beeos", "--once", stdout=out, stderr=io.StringIO())
    assert Task.objects.count() == 8
    page_2 = standin.requests_to("GET", "/api/v1/tasks")[1].query["since"][0]
    assert SyncCursor.objects.get(name="tasks").value == page_2

    calls, summary = sync_pass(standin)
    assert Task.objects.filter(task_id="task_4").exists()
    assert summary["created"] == 1
    # From the kept cursor (page 2, then page 3 all known), then the top page.
    since = [r.query.get("since") for r in standin.requests_to("GET", "/api/v1/tasks")]
    assert since[0] == [page_2] and since[-1] is None
    assert calls["get_task"] == 1
    assert SyncCursor.objects.get(name="tasks").value == ""


def test_a_refused_operations_cursor_lists_from_the_start(standin, settings, monkeypatch):
    monkeypatch.setattr(sync, "OPERATION_PAGE", 2)
    settings.BEEOS_SYNC_SWEEP = 0
    for i in range(3):
        standin.add_operation(str(uuid.uuid4()), instance_id=INSTANCE, created_at=at(i))
    sync_pass(standin)
    assert RuntimeOperation.objects.count() == 3
    stored = json.loads(SyncCursor.objects.get(name=f"operations:{INSTANCE}").value)
    assert stored["cursor"]

    standin.fail(f"/api/v1/instances/{INSTANCE}/operations", 400)  # the cursor is refused
    new = standin.add_operation(str(uuid.uuid4()), instance_id=INSTANCE, created_at=at(9))
    calls, summary = sync_pass(standin)

    assert calls == {"list_user_tasks": 1, "list_operations": 3, "stream_operation_events": 1}
    assert summary["created"] == 1
    assert RuntimeOperation.objects.filter(operation_id=new.id).exists()
