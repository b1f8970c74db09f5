"""A webhook worker killed mid-batch loses nothing and applies nothing twice.

The worker is the real thing in a real process: ``manage.py apply_webhooks
--loop`` on the test database. It is SIGKILLed while a batch transaction is
open on a backlog of thousands of events, restarted, and left to drain. Then
every event is applied exactly once: each is marked applied after exactly one
committed attempt, every task went queued -> running -> completed with exactly
one audit entry per state change, each naming its own event, and the status
counters agree with the rows.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import quote

import pytest
from django.db import connection, transaction

from beeos_console.auditlog.models import AuditEntry
from beeos_console.mirror import counters
from beeos_console.upstream import inbox
from beeos_console.upstream.models import WebhookInboxEvent
from tasks.models import Task

from .factories import BASE, iso

ROOT = Path(__file__).resolve().parent.parent
TASKS = 2000  # x 3 events: a backlog of 6,000
APP_NAME = "webhook-kill-test"
LIFECYCLE = (("queued", 0), ("running", 1), ("completed", 2))


def database_url(application_name: str) -> str:
    s = connection.settings_dict
    auth = quote(s["USER"] or "postgres") + (f":{quote(s['PASSWORD'])}" if s["PASSWORD"] else "")
    host = f"{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}"
    return f"postgres://{auth}@{host}/{s['NAME']}?application_name={application_name}"


def start_worker() -> subprocess.Popen:
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "beeos_console.settings",
        "DATABASE_URL": database_url(APP_NAME),
        "LOG_LEVEL": "WARNING",
    }
    return subprocess.Popen(
        [sys.executable, "manage.py", "apply_webhooks", "--loop", "--batch", "500"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


def wait_for(condition, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


def applied() -> int:
    return WebhookInboxEvent.objects.filter(status="applied").count()


def worker_in_a_batch() -> bool:
    """The worker's connection is inside a transaction that has written (mid-batch)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s "
            "AND backend_xid IS NOT NULL",
            [APP_NAME],
        )
        return cursor.fetchone()[0] > 0


def queue_backlog() -> list[int]:
    """TASKS tasks' lifecycles, interleaved in blocks (an object's events span batches),
    each event delivered twice (the second is a duplicate, refused by the inbox)."""
    ids = []
    with transaction.atomic():  # one commit, not 12,000
        _queue_blocks(ids)
    return ids


def _queue_blocks(ids: list[int]) -> None:
    for block in range(0, TASKS, 250):
        for status, minute in LIFECYCLE:
            for i in range(block, min(block + 250, TASKS)):
                payload = {
                    "type": "task_status",
                    "task_id": f"tsk_kill_{i:05d}",
                    "status": status,
                    "final": status == "completed",
                    "timestamp": iso(BASE + dt.timedelta(minutes=minute)),
                }
                envelope = inbox.task_status_envelope(payload)
                ids.append(inbox.store(envelope, "task_push", json.dumps(payload)))
                assert inbox.store(envelope, "task_push", json.dumps(payload)) is None


@pytest.mark.django_db(transaction=True)
def test_a_worker_killed_mid_batch_loses_nothing_and_applies_nothing_twice():
    started = time.monotonic()
    ids = queue_backlog()
    print(f"backlog of {len(ids)} queued in {time.monotonic() - started:.1f} s")
    assert len(ids) == len(set(ids)) == TASKS * 3

    worker = start_worker()
    try:
        wait_for(lambda: applied() > 0 and worker_in_a_batch(), 120, "the worker mid-batch")
        worker.send_signal(signal.SIGKILL)
        worker.wait(10)
    finally:
        if worker.poll() is None:
            worker.kill()
    done_before = applied()
    print(f"killed after {done_before} applied, {time.monotonic() - started:.1f} s in")
    assert 0 < done_before < len(ids), done_before
    # The killed batch rolled back: nothing it touched is half-applied. (PostgreSQL
    # ends the backend when it notices the client is gone.)
    wait_for(lambda: not worker_in_a_batch(), 30, "the killed worker's transaction to end")
    assert applied() == done_before

    worker = start_worker()
    try:
        wait_for(lambda: applied() == len(ids), 300, "the restarted worker to drain the backlog")
        worker.send_signal(signal.SIGTERM)
        assert worker.wait(30) == 0, worker.stderr.read().decode()[-2000:]
    finally:
        if worker.poll() is None:
            worker.kill()

    print(f"drained at {time.monotonic() - started:.1f} s")
    events = WebhookInboxEvent.objects.all()
    assert events.count() == len(ids)
    # Exactly one committed attempt per event: the killed attempt left no trace.
    assert set(events.values_list("status", "attempts").distinct()) == {("applied", 1)}
    assert _results_by_status(events) == {
        ("queued", "created"): TASKS,
        ("running", "updated"): TASKS,
        ("completed", "updated"): TASKS,
    }
    # Every task went through its lifecycle once, in order.
    assert Task.objects.count() == TASKS
    assert set(Task.objects.values_list("raw_state", "status").distinct()) == {
        ("completed", "completed")
    }
    entries = AuditEntry.objects.filter(action="task.state_changed", actor="beeos-webhook")
    assert entries.count() == TASKS * 2
    named = [e["webhook_event"] for e in entries.values_list("detail", flat=True)]
    assert len(named) == len(set(named))  # no event made two entries
    changing = set(
        events.filter(event_status__in=("running", "completed")).values_list("pk", flat=True)
    )
    assert set(named) == changing
    per_task: dict[str, list[str]] = {}
    for object_id, after in entries.order_by("seq").values_list("object_id", "after"):
        per_task.setdefault(object_id, []).append(after["raw_state"])
    assert set(map(tuple, per_task.values())) == {("running", "completed")}
    assert counters.totals(counters.TASK) == {"completed": TASKS}


def _results_by_status(events) -> dict[tuple[str, str], int]:
    counts: dict[tuple[str, str], int] = {}
    for status, result in events.values_list("event_status", "result"):
        counts[(status, result)] = counts.get((status, result), 0) + 1
    return counts
