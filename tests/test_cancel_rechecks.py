"""Uncertain cancels get resolved, and the console's own database errors are "not sent".

Over real HTTP against the stand-in, on PostgreSQL. Time is driven by passing ``now``
into the resolver (never by sleeping): the schedule is 1, 5, 15 and 60 minutes after
the uncertain answer, then daily for a week, then the cancel stays open, flagged.
"""

from __future__ import annotations

import datetime as dt
import re
import threading

import pytest
from django.core.management import call_command
from django.db import connection, transaction
from django_tasks_db.models import DBTaskResult

from beeos_console.auditlog.models import AuditEntry
from beeos_console.cancels import gateways
from beeos_console.cancels.engine import (
    GAVE_UP,
    NOT_DUE,
    RECHECK_AFTER,
    STILL_OPEN,
    recheck,
    resolve_uncertain_cancels,
)
from beeos_console.cancels.gateways import LocalGateway
from beeos_console.cancels.models import CancelRequest
from beeos_console.mirror.models import StatusCount
from beeos_console.upstream import clients
from tasks.models import Task
from tests.standin import BeeOSStandIn

from .factories import make_task
from .test_cancel_beeos import (
    A2A_CANCEL,
    AGENT,
    CLOUD_KEY,
    KEY,
    OP_CANCEL,
    TASK_CANCEL,
    a2a_pair,
    cancel,
    cancel_op,
    make_gateway,
    operation_pair,
    task_pair,
)

pytestmark = pytest.mark.django_db

RESOLVER_TASK = "beeos_console.cancels.engine.recheck_uncertain_cancel"


@pytest.fixture(autouse=True)
def timeouts(monkeypatch):
    monkeypatch.setattr(clients, "TIMEOUT", (1.0, 3.0))


@pytest.fixture
def standin():
    with BeeOSStandIn(api_key=KEY, cloud_api_key=CLOUD_KEY) as server:
        yield server
    assert server.errors == []


@pytest.fixture
def gw(standin):
    gateway_ = make_gateway(standin)
    yield gateway_
    gateway_.client.rest_client.pool_manager.clear()


def uncertain_task_cancel(standin: BeeOSStandIn, gw) -> tuple[Task, CancelRequest]:
    """An OpenAPI task whose cancel was lost after dispatch and did not take (yet)."""
    task = task_pair(standin, upstream_status="running", mirror_status="running")
    standin.drop_connection(TASK_CANCEL, method="POST", apply_effect=False)
    outcome = cancel(task, gw)
    assert outcome.result == "uncertain", outcome.message
    task.refresh_from_db()
    assert task.status == "processing"  # the immediate re-read: still running
    return task, outcome.request


def resolutions(object_id: str) -> list[AuditEntry]:
    return list(
        AuditEntry.objects.filter(object_id=object_id, action__startswith="task.cancel_")
    ) + list(AuditEntry.objects.filter(object_id=object_id, action__startswith="operation.cancel_"))


def task_gets(standin: BeeOSStandIn, task: Task) -> int:
    return len(standin.requests_to("GET", f"/api/v1/agents/{AGENT}/tasks/{task.task_id}"))


# --- the resolver ---------------------------------------------------------------------------


def test_uncertain_cancel_is_scheduled_and_resolves_cancelled_at_the_first_due_reread(standin, gw):
    task, request = uncertain_task_cancel(standin, gw)
    assert (request.checks, request.resolved_at) == (0, None)
    assert request.next_check_at == request.finished_at + dt.timedelta(minutes=1)
    gets = task_gets(standin, task)

    # Not due yet: nothing is read, nothing recorded.
    early = resolve_uncertain_cancels(now=request.finished_at + dt.timedelta(seconds=30), gw=gw)
    assert early == []
    assert task_gets(standin, task) == gets
    # Meanwhile the cancel did take upstream.
    standin.set_task_status(task.task_id, "canceled")

    [done] = resolve_uncertain_cancels(now=request.finished_at + dt.timedelta(minutes=1), gw=gw)

    assert done.outcome == "cancelled"
    assert "cancel took effect" in done.message
    assert task_gets(standin, task) == gets + 1
    request.refresh_from_db()
    assert request.resolution == "cancelled" and request.resolved_at is not None
    assert (request.checks, request.next_check_at, request.state) == (1, None, "uncertain")
    task.refresh_from_db()
    assert task.status == "cancelled"
    [entry] = resolutions(task.task_id)
    assert entry.action == "task.cancel_resolved"
    assert entry.actor == "cancel-resolver"
    assert entry.detail["resolution"] == "cancelled"
    assert entry.detail["idempotency_key"] == request.idempotency_key
    assert entry.detail["cancel_request"] == request.pk
    assert entry.before["raw_state"] == "running" and entry.after["raw_state"] == "canceled"
    # Resolved: later sweeps leave it alone and write nothing more.
    assert resolve_uncertain_cancels(now=request.finished_at + dt.timedelta(days=2), gw=gw) == []
    assert recheck(request.pk, now=request.finished_at + dt.timedelta(days=2), gw=gw).outcome == (
        NOT_DUE
    )
    assert len(resolutions(task.task_id)) == 1
    assert len(standin.requests_to("POST", TASK_CANCEL)) == 1  # never resent


def test_uncertain_cancel_of_a_task_that_completed_anyway(standin, gw):
    task, request = uncertain_task_cancel(standin, gw)
    standin.set_task_status(task.task_id, "completed")

    now = request.finished_at + dt.timedelta(minutes=1)
    [first] = resolve_uncertain_cancels(now=now, gw=gw)

    assert first.outcome == "completed"
    assert "ended before the cancel took" in first.message
    request.refresh_from_db()
    assert request.resolution == "completed"
    [entry] = resolutions(task.task_id)
    assert entry.detail["resolution"] == "completed"
    assert entry.after["status"] == "completed"


def test_still_running_is_reread_on_the_whole_schedule_then_given_up(standin, gw):
    task, request = uncertain_task_cancel(standin, gw)
    start = request.finished_at
    gets = task_gets(standin, task)

    for n, after in enumerate(RECHECK_AFTER, start=1):
        # Just before the slot: not due, no read.
        assert resolve_uncertain_cancels(now=start + after - dt.timedelta(seconds=1), gw=gw) == []
        [item] = resolve_uncertain_cancels(now=start + after, gw=gw)
        request.refresh_from_db()
        assert request.checks == n
        assert task_gets(standin, task) == gets + n
        if n < len(RECHECK_AFTER):
            assert item.outcome == STILL_OPEN
            assert request.next_check_at == start + RECHECK_AFTER[n]
            assert resolutions(task.task_id) == []  # a still-running re-read is no resolution

    assert [a.total_seconds() for a in RECHECK_AFTER] == [
        60,
        300,
        900,
        3600,
        *(86400 * d for d in range(1, 8)),
    ]
    assert item.outcome == GAVE_UP and "check it with BeeOS by hand" in item.message
    assert request.gave_up_at is not None and request.next_check_at is None
    assert request.resolved_at is None  # still open: the outcome is not known
    [entry] = resolutions(task.task_id)
    assert entry.action == "task.cancel_gave_up"
    assert resolve_uncertain_cancels(now=start + dt.timedelta(days=30), gw=gw) == []
    assert len(standin.requests_to("POST", TASK_CANCEL)) == 1


def test_a_stopped_worker_skips_missed_slots_instead_of_bursting(standin, gw):
    task, request = uncertain_task_cancel(standin, gw)

    [item] = resolve_uncertain_cancels(now=request.finished_at + dt.timedelta(hours=3), gw=gw)

    assert item.outcome == STILL_OPEN
    request.refresh_from_db()
    assert request.checks == 1
    assert request.next_check_at == request.finished_at + dt.timedelta(days=1)


def test_uncertain_a2a_cancel_resolves_cancelled(standin, gw):
    task = a2a_pair(standin, upstream_state="TASK_STATE_WORKING", mirror_state="working")
    standin.a2a_error(-32011, "TASK_TIMEOUT", status=504)
    outcome = cancel(task, gw)
    assert outcome.result == "uncertain"
    standin.set_a2a_state(task.task_id, "TASK_STATE_CANCELED")

    [item] = resolve_uncertain_cancels(
        now=outcome.request.finished_at + dt.timedelta(minutes=1), gw=gw
    )

    assert item.outcome == "cancelled"
    task.refresh_from_db()
    assert (task.raw_state, task.status) == ("TASK_STATE_CANCELED", "cancelled")
    assert len(resolutions(task.task_id)) == 1
    assert len(standin.requests_to("POST", A2A_CANCEL)) == 1


def test_uncertain_operation_cancel_of_one_that_succeeded_anyway(standin, gw):
    op = operation_pair(standin)
    standin.drop_connection(OP_CANCEL, method="POST", apply_effect=False)
    outcome = cancel_op(op, gw)
    assert outcome.result == "uncertain"
    start = outcome.request.finished_at

    [running] = resolve_uncertain_cancels(now=start + dt.timedelta(minutes=1), gw=gw)
    assert running.outcome == STILL_OPEN
    standin.set_operation_status(op.operation_id, "succeeded")
    [done] = resolve_uncertain_cancels(now=start + dt.timedelta(minutes=5), gw=gw)

    assert done.outcome == "completed"
    [entry] = resolutions(op.operation_id)
    assert entry.action == "operation.cancel_resolved"
    assert entry.after["raw_status"] == "succeeded"
    assert len(standin.requests_to("POST", OP_CANCEL)) == 1


def test_a_stale_worker_run_does_nothing(standin, gw):
    task, request = uncertain_task_cancel(standin, gw)
    now = request.finished_at + dt.timedelta(minutes=1)
    assert recheck(request.pk, now=now, gw=gw, expected_checks=0).outcome == STILL_OPEN
    gets = task_gets(standin, task)

    # A duplicate of the run that just happened (same ``checks``): no read, no change.
    later = request.finished_at + dt.timedelta(minutes=5)
    assert recheck(request.pk, now=later, gw=gw, expected_checks=0).outcome == NOT_DUE
    assert task_gets(standin, task) == gets
    request.refresh_from_db()
    assert request.checks == 1


@pytest.mark.django_db(transaction=True)
def test_the_worker_runs_the_rechecks_it_was_given(standin, gw, settings):
    """`make run`'s db_worker needs no setup: the uncertain answer enqueued the re-read."""
    settings.BEEOS_API_URL = standin.url
    settings.BEEOS_API_KEY = KEY
    task, request = uncertain_task_cancel(standin, gw)
    [queued] = DBTaskResult.objects.filter(task_path=RESOLVER_TASK)
    assert queued.run_after == request.next_check_at
    assert queued.args_kwargs == {"args": [request.pk, 0], "kwargs": {}}
    # Let the minute pass (the worker reads the real clock).
    past = dt.datetime.now(dt.UTC) - dt.timedelta(seconds=5)
    CancelRequest.objects.filter(pk=request.pk).update(
        finished_at=past - RECHECK_AFTER[0], next_check_at=past
    )
    DBTaskResult.objects.filter(pk=queued.pk).update(run_after=past)

    call_command("db_worker", "--batch", "--no-startup-delay", verbosity=0)

    request.refresh_from_db()
    assert request.checks == 1 and request.resolved_at is None
    queued.refresh_from_db()
    assert queued.status == "SUCCESSFUL"
    # The run that advanced the schedule enqueued the next one (and only one).
    [following] = DBTaskResult.objects.filter(task_path=RESOLVER_TASK, status="READY")
    assert following.args_kwargs == {"args": [request.pk, 1], "kwargs": {}}
    assert following.run_after == request.next_check_at


def test_resolve_uncertain_cancels_command(standin, settings):
    settings.BEEOS_API_URL = standin.url
    settings.BEEOS_API_KEY = KEY
    gw = make_gateway(standin)
    task, request = uncertain_task_cancel(standin, gw)
    standin.set_task_status(task.task_id, "canceled")
    CancelRequest.objects.filter(pk=request.pk).update(
        next_check_at=dt.datetime.now(dt.UTC) - dt.timedelta(seconds=1)
    )
    from io import StringIO

    out = StringIO()
    call_command("resolve_uncertain_cancels", stdout=out)

    assert f"task {task.task_id}: cancelled" in out.getvalue()
    assert "1 uncertain cancels re-read: 1 cancelled" in out.getvalue()
    assert len(resolutions(task.task_id)) == 1


# --- the dashboard ---------------------------------------------------------------------------


def test_dashboard_lists_open_uncertain_cancels(standin, gw, client, support_user):
    task, request = uncertain_task_cancel(standin, gw)
    CancelRequest.objects.filter(pk=request.pk).update(checks=2)
    client.force_login(support_user)

    html = client.get("/").content.decode()

    section = html[html.index('id="uncertain-cancels"') :]
    section = section[: section.index("</section>")]
    assert f'href="/tasks/{task.task_id}/?protocol=openapi"' in section
    assert '<td class="num">2</td>' in section
    # The next re-read, about a minute ahead (a slow page render eats a few seconds).
    assert re.search(r"in (1 min|[1-5]?\d s)\b", section)
    assert "olga-operator" in section

    standin.set_task_status(task.task_id, "canceled")
    resolve_uncertain_cancels(now=request.finished_at + dt.timedelta(minutes=1), gw=gw)
    html = client.get("/").content.decode()
    section = html[html.index('id="uncertain-cancels"') :]
    assert "No uncertain cancels open." in section[: section.index("</section>")]


def test_dashboard_flags_given_up_cancels(standin, gw, client, support_user):
    task, request = uncertain_task_cancel(standin, gw)
    resolve_uncertain_cancels(now=request.finished_at + RECHECK_AFTER[-1], gw=gw)
    request.refresh_from_db()
    assert request.gave_up_at is not None
    client.force_login(support_user)

    html = client.get("/").content.decode()

    section = html[html.index('id="uncertain-cancels"') :]
    section = section[: section.index("</section>")]
    assert task.task_id in section and "gave up" in section and "do not replay" in section


# --- the console's own database fails: "not sent", never "uncertain" -------------------------


def _hold_lock(sql: str, params: list, ready: threading.Event, release: threading.Event):
    """Another connection takes a real lock and keeps it (at most 3 s)."""

    def run() -> None:
        try:
            with transaction.atomic(), connection.cursor() as cursor:
                cursor.execute(sql, params)
                ready.set()
                release.wait(timeout=3)
        finally:
            connection.close()

    thread = threading.Thread(target=run)
    thread.start()
    assert ready.wait(timeout=5)
    return thread


@pytest.mark.django_db(transaction=True)
def test_a_lock_timeout_before_the_call_is_not_sent(standin, monkeypatch):
    monkeypatch.setattr(gateways, "LOCK_TIMEOUT", "200ms")
    task = task_pair(standin, upstream_status="running", mirror_status="running")
    ready, release = threading.Event(), threading.Event()
    table = Task._meta.db_table
    holder = _hold_lock(
        f"SELECT id FROM {table} WHERE id = %s FOR UPDATE", [task.pk], ready, release
    )
    gw = make_gateway(standin)
    try:
        outcome = cancel(task, gw)
    finally:
        release.set()
        holder.join(timeout=10)
        gw.client.rest_client.pool_manager.clear()

    assert outcome.result == "not_sent", outcome.message
    assert "database" in outcome.message and "Safe to retry" in outcome.message
    assert standin.requests == []  # nothing went out
    assert outcome.request.state == "not_sent" and outcome.request.next_check_at is None
    [entry] = AuditEntry.objects.filter(action="task.cancel", object_id=task.task_id)
    assert entry.detail["result"] == "not_sent"
    assert entry.detail["upstream"]["where"] == "console database"
    assert entry.detail["upstream"]["error"] == "OperationalError"
    # Safe to retry indeed: once the lock is gone the next attempt goes through.
    again = cancel(task, make_gateway(standin))
    assert again.result == "cancelled", again.message


@pytest.mark.django_db(transaction=True)
def test_a_database_error_inside_the_local_cancel_is_not_sent_not_uncertain(monkeypatch):
    monkeypatch.setattr(gateways, "LOCK_TIMEOUT", "200ms")
    task = make_task("running")
    ready, release = threading.Event(), threading.Event()
    # The local cancel moves the status counters; another writer holds their table.
    table = StatusCount._meta.db_table
    holder = _hold_lock(f"LOCK TABLE {table} IN EXCLUSIVE MODE", [], ready, release)
    try:
        outcome = cancel(task, LocalGateway())
    finally:
        release.set()
        holder.join(timeout=10)

    assert outcome.result == "not_sent", outcome.message
    assert "database" in outcome.message and "Safe to retry" in outcome.message
    assert outcome.request.state == "not_sent"
    assert outcome.request.next_check_at is None  # nothing to re-read: nothing happened
    task.refresh_from_db()
    assert task.status == "processing"  # rolled back whole
    [entry] = AuditEntry.objects.filter(action="task.cancel", object_id=task.task_id)
    assert entry.detail["result"] == "not_sent"
    assert entry.detail["upstream"]["outcome"] == "not_sent"
    assert not DBTaskResult.objects.filter(task_path=RESOLVER_TASK).exists()
    again = cancel(task, LocalGateway())
    assert again.result == "cancelled", again.message
