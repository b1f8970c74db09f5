"""Tasks by protocol and product status: the maintained ``task_protocol`` counter.

Every writer keeps it equal to what the task table holds (counted here the slow way,
row by row): ingest one record at a time and in batches, webhook events, the local
cancel, re-projection, prune; ``rebuild_counters`` recomputes it, and the migration's
backfill writes what the writers maintain. /metrics exports it (tests/test_metrics.py).
"""

from __future__ import annotations

import copy
import datetime as dt
import importlib
import io
from collections import Counter

import pytest
from django.core.management import call_command
from django.db import connection
from django.utils import timezone

from beeos_console.cancels.gateways import LocalGateway
from beeos_console.ingest.services import ingest_records
from beeos_console.mirror.models import StatusCount
from beeos_console.projection.reprojection import reproject_row
from beeos_console.upstream import inbox
from tasks.models import Task
from tasks.services.cancel import cancel_task
from tasks.services.write import ingest_product_task

from .factories import BASE, FEEDER, iso, make_a2a_task, make_task
from .test_webhook_inbox import queue, task_event

pytestmark = pytest.mark.django_db

NOW = timezone.now().replace(microsecond=0)
BACKFILL = importlib.import_module("beeos_console.core.migrations.0016_task_protocol_counters")

Key = tuple[str, str, dt.datetime]  # (protocol, status, hour created)


def expected() -> dict[Key, int]:
    """Tasks by protocol, product status and hour created, read row by row."""
    found: Counter[Key] = Counter()
    for protocol, status, created in Task.objects.values_list("protocol", "status", "created_at"):
        assert created is not None  # every task here says when it was created
        hour = created.astimezone(dt.UTC).replace(minute=0, second=0, microsecond=0)
        found[(protocol, status, hour)] += 1
    return dict(found)


def stored() -> dict[Key, int]:
    """The ``task_protocol`` counters, non-zero ones, keyed as ``expected``."""
    found: dict[Key, int] = {}
    rows = StatusCount.objects.filter(kind="task_protocol").values_list("status", "hour", "count")
    for value, hour, n in rows:
        if n:
            protocol, status = value.split(":")
            found[(protocol, status, hour)] = n
    return found


def table_totals() -> Counter[tuple[str, str]]:
    """Tasks per (protocol, status), counted in the table."""
    return Counter(Task.objects.values_list("protocol", "status"))


def by_protocol() -> Counter[tuple[str, str]]:
    """The counters summed over the hours: tasks per (protocol, status)."""
    totals: Counter[tuple[str, str]] = Counter()
    for (protocol, status, _hour), n in stored().items():
        totals[(protocol, status)] += n
    return totals


def a2a(state: str, **extra):
    created = iso(NOW - dt.timedelta(hours=2))
    return make_a2a_task(state, created_at=created, **extra)


def product(task_id: str, status: str, minutes: int = 0):
    data = {
        "task_id": task_id,
        "status": status,
        "created_at": iso(NOW - dt.timedelta(hours=3)),
        "updated_at": iso(NOW - dt.timedelta(hours=3) + dt.timedelta(minutes=minutes)),
    }
    return ingest_product_task(data, actor=FEEDER).obj


def some_tasks() -> Task:
    """Tasks of the three protocols in several statuses; returns a running OpenAPI one."""
    running = make_task("running", now=NOW)
    make_task("completed", now=NOW, minutes_ago=70)
    make_task("paused_by_ops", now=NOW)  # unmapped
    a2a("TASK_STATE_WORKING")
    a2a("TASK_STATE_COMPLETED")
    product("job_1", "queued")
    product("job_2", "failed")
    return running


def test_one_record_writes_count_each_task_under_its_protocol_and_move_it():
    running = some_tasks()
    assert by_protocol() == {
        ("openapi", "processing"): 1,
        ("openapi", "completed"): 1,
        ("openapi", "unmapped"): 1,
        ("a2a", "processing"): 1,
        ("a2a", "completed"): 1,
        ("product", "queued"): 1,
        ("product", "failed"): 1,
    }
    # Changes move the task, under its own protocol only.
    make_task("completed", now=NOW, minutes_ago=1, task_id=running.task_id)
    product("job_1", "processing", minutes=5)
    a2a("TASK_STATE_WORKING", id="a2a_move", contextId="ctx_move")
    failed = {"state": "TASK_STATE_FAILED", "timestamp": iso(NOW)}
    a2a("TASK_STATE_FAILED", id="a2a_move", contextId="ctx_move", status=failed)
    assert stored() == expected()
    totals = by_protocol()
    assert (totals[("openapi", "processing")], totals[("openapi", "completed")]) == (0, 2)
    assert (totals[("product", "queued")], totals[("product", "processing")]) == (0, 1)
    assert (totals[("a2a", "processing")], totals[("a2a", "failed")]) == (1, 1)


def test_a_local_cancel_moves_the_task_under_its_protocol():
    running = some_tasks()
    outcome = cancel_task(
        running.protocol, running.task_id, actor=FEEDER, reason="r", gw=LocalGateway()
    )
    assert outcome.result == "cancelled"
    assert stored() == expected()
    assert by_protocol()[("openapi", "cancelled")] == 1


def test_a_batch_counts_as_one_record_at_a_time():
    created = iso(NOW - dt.timedelta(minutes=30))
    records = [
        {
            "kind": "a2a_task",
            "data": {
                "id": f"batch_{i}",
                "contextId": f"ctx_batch_{i}",
                "status": {"state": state, "timestamp": iso(NOW - dt.timedelta(seconds=60 - i))},
                "created_at": created,
            },
        }
        for i, state in enumerate(["TASK_STATE_WORKING", "TASK_STATE_COMPLETED"] * 3)
    ]
    records += [
        {
            "kind": "openapi_task",
            "data": {
                "task_id": f"tsk_batch_{i}",
                "agent_id": "agt_batch",
                "status": status,
                "created_at": created,
            },
        }
        for i, status in enumerate(["queued", "running", "failed"])
    ]
    # The same OpenAPI task twice in one call: counted once, under its last status.
    records.append(
        {
            "kind": "openapi_task",
            "data": {
                "task_id": "tsk_batch_0",
                "agent_id": "agt_batch",
                "status": "running",
                "created_at": created,
                "updated_at": iso(NOW),
            },
        }
    )
    answers = ingest_records(copy.deepcopy(records), FEEDER)
    assert {a["result"] for a in answers} == {"created", "updated"}, answers
    assert stored() == expected()
    # Again, newer: every stored task moves, in one batch.
    for i, record in enumerate(records[:6]):
        record["data"]["status"] = {
            "state": "TASK_STATE_CANCELED",
            "timestamp": iso(NOW + dt.timedelta(seconds=i)),
        }
    ingest_records(records[:6], FEEDER)
    assert stored() == expected()
    totals = by_protocol()
    assert totals[("a2a", "cancelled")] == 6 and totals[("a2a", "processing")] == 0
    assert totals[("openapi", "processing")] == 2 and totals[("openapi", "queued")] == 0


def test_webhook_events_move_the_task_as_they_are_applied():
    make_task("queued", now=BASE, minutes_ago=5, task_id="tsk_hook")
    for status, minute in [("running", 1), ("input_required", 2)]:
        queue(task_event("tsk_hook", status, minute))
    queue(task_event("tsk_hook_new", "queued", 0))  # a task the console learns from its event
    report = inbox.apply_batch()
    assert report.failed == 0 and report.applied == 3
    assert by_protocol() == table_totals()
    queue(task_event("tsk_hook", "completed", 3))
    inbox.apply_batch()
    assert by_protocol() == table_totals()
    totals = by_protocol()
    assert (totals[("openapi", "completed")], totals[("openapi", "queued")]) == (1, 1)
    assert totals[("openapi", "processing")] == 0


def test_reprojection_moves_a_drifted_task_back():
    running = some_tasks()
    # A stored status today's rules disagree with: counted where the table has it.
    Task.objects.filter(pk=running.pk).update(status="failed")
    call_command("rebuild_counters", stdout=io.StringIO())
    assert by_protocol()[("openapi", "failed")] == 1
    reproject_row("task", running.pk, actor=FEEDER)
    assert stored() == expected()
    assert by_protocol()[("openapi", "failed")] == 0
    assert by_protocol()[("openapi", "processing")] == 1


def test_rebuild_counters_recomputes_it_from_the_table():
    some_tasks()
    maintained = stored()
    StatusCount.objects.filter(kind="task_protocol").update(count=7)
    out = io.StringIO()
    call_command("rebuild_counters", stdout=out)
    assert "task_protocol:" in out.getvalue()
    assert stored() == maintained == expected()


def test_the_migration_backfills_what_the_writers_maintain():
    some_tasks()
    maintained = stored()
    StatusCount.objects.filter(kind="task_protocol").delete()
    with connection.cursor() as cursor:
        cursor.execute(BACKFILL.BACKFILL)
    assert stored() == maintained == expected()
    # Its reverse forgets the counter, and leaves the others alone.
    with connection.cursor() as cursor:
        cursor.execute(BACKFILL.FORGET)
    assert stored() == {}
    assert StatusCount.objects.filter(kind="task").exists()
