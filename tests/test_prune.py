"""`manage.py prune`: old terminal work goes, in batches; what is live, referred to or new stays."""

from __future__ import annotations

import datetime as dt
import io
from collections import Counter

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db.models import Count
from django.db.models.functions import TruncHour
from django.utils import timezone

from beeos_console.auditlog.models import AuditEntry
from beeos_console.cancels.models import BulkCancel, CancelRequest
from beeos_console.mirror import agent_counters
from beeos_console.mirror.models import AgentCount, StatusCount
from beeos_console.retention.durations import parse_period
from operations.models import RuntimeOperation, RuntimeOperationEvent
from tasks.models import Artifact, Message, Task

from .factories import iso, make_a2a_task, make_event, make_message, make_operation, make_task

pytestmark = pytest.mark.django_db

NOW = timezone.now()
OLD = NOW - dt.timedelta(days=120)
RECENT = NOW - dt.timedelta(days=10)


def aged(obj, at: dt.datetime = OLD):
    """Last updated (upstream and by us) at ``at``; ``update`` leaves auto_now alone."""
    type(obj).objects.filter(pk=obj.pk).update(updated_at=at, mirrored_at=at)
    return obj


def old_task(status: str = "completed", **extra):
    return aged(make_task(status, now=OLD, **extra))


def old_operation(status: str = "succeeded", **extra):
    snapshot = {"createdAt": iso(OLD), "updatedAt": iso(OLD), **extra}
    return aged(make_operation(status, **snapshot))


def prune(*args: str) -> str:
    out = io.StringIO()
    call_command("prune", *args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def counters() -> dict[tuple[str, str, dt.datetime], int]:
    return {
        (kind, status, hour): n
        for kind, status, hour, n in StatusCount.objects.values_list(
            "kind", "status", "hour", "count"
        )
        if n
    }


def recount() -> dict[tuple[str, str, dt.datetime], int]:
    """What ``rebuild_counters`` would write, read from the tables now."""
    found: Counter[tuple[str, str, dt.datetime]] = Counter()
    for kind, model, columns in (
        ("task", Task, ("status",)),
        ("task_protocol", Task, ("protocol", "status")),  # "a2a:completed"
        ("operation", RuntimeOperation, ("status",)),
        ("operation_raw", RuntimeOperation, ("raw_status",)),
    ):
        rows = (
            model.objects.annotate(hour=TruncHour("created_at", tzinfo=dt.UTC))
            .values(*columns, "hour")
            .annotate(n=Count("id"))
            .order_by()
        )
        for row in rows:
            found[(kind, ":".join(row[c] for c in columns)[:32], row["hour"])] += row["n"]
    return dict(found)


def agent_counts() -> dict[tuple[str, str, str], int]:
    rows = AgentCount.objects.values_list("agent_id", "role", "status", "count")
    return {(agent, role, status): n for agent, role, status, n in rows if n}


def snapshot() -> dict[str, int]:
    return {
        model.__name__: model.objects.count()
        for model in (
            Task,
            Message,
            Artifact,
            RuntimeOperation,
            RuntimeOperationEvent,
            AuditEntry,
            StatusCount,
        )
    }


class TestWhatGoes:
    def test_old_terminal_rows_and_their_children_go_the_rest_stays(self):
        done = old_task("completed")
        make_message(done, created_at=iso(OLD))
        failed = old_task("failed")
        a2a = aged(
            make_a2a_task(
                "TASK_STATE_COMPLETED",
                status={"state": "TASK_STATE_COMPLETED", "timestamp": iso(OLD)},
                artifacts=[{"artifactId": "art_1", "parts": [{"kind": "text", "text": "x"}]}],
            )
        )
        assert Artifact.objects.filter(task=a2a).exists()
        stuck = old_task("running")  # old but not terminal
        recent = aged(make_task("completed", now=RECENT), RECENT)
        reply = make_message(recent, created_at=iso(RECENT))
        gone_op = old_operation("succeeded")
        make_event(gone_op, 1)
        live_op = old_operation("running")
        make_event(live_op, 1)
        recent_op = make_operation("failed")
        assert counters() == recount()

        out = prune("--older-than", "90d")

        assert not Task.objects.filter(pk__in=[done.pk, failed.pk, a2a.pk]).exists()
        assert set(Task.objects.values_list("pk", flat=True)) == {stuck.pk, recent.pk}
        assert list(Message.objects.values_list("pk", flat=True)) == [reply.pk]
        assert not Artifact.objects.exists()
        assert set(RuntimeOperation.objects.values_list("pk", flat=True)) == {
            live_op.pk,
            recent_op.pk,
        }
        assert list(RuntimeOperationEvent.objects.values_list("operation_id", flat=True)) == [
            live_op.pk
        ]
        assert "Removed" in out
        assert "3 tasks, 1 operations, 1 messages, 1 artifacts, 1 events" in out
        assert counters() == recount()
        # The per-agent counts too (the agents list): what a rebuild from the tables gives.
        kept = agent_counts()
        agent_counters.rebuild(Task)
        assert agent_counts() == kept

    def test_what_something_still_refers_to_stays(self):
        open_cancel = old_task("canceled")
        CancelRequest.objects.create(
            idempotency_key="k-open",
            object_kind="task",
            protocol="openapi",
            object_id=open_cancel.task_id,
            requested_by="olga",
            reason="stuck",
            gateway="beeos",
            state=CancelRequest.State.OPEN,
        )
        uncertain = old_task("canceled")
        CancelRequest.objects.create(
            idempotency_key="k-uncertain",
            object_kind="task",
            protocol="openapi",
            object_id=uncertain.task_id,
            requested_by="olga",
            reason="stuck",
            gateway="beeos",
            state=CancelRequest.State.UNCERTAIN,
        )
        settled = old_task("canceled")
        CancelRequest.objects.create(
            idempotency_key="k-done",
            object_kind="task",
            protocol="openapi",
            object_id=settled.task_id,
            requested_by="olga",
            reason="stuck",
            gateway="beeos",
            state=CancelRequest.State.ACCEPTED,
        )
        listed = old_task("canceled")
        BulkCancel.objects.create(
            object_kind="task",
            requested_by="olga",
            reason="stuck",
            state=BulkCancel.State.RUNNING,
            items=[["openapi", listed.task_id]],
        )
        finished_bulk = old_task("canceled")
        BulkCancel.objects.create(
            object_kind="task",
            requested_by="olga",
            reason="stuck",
            state=BulkCancel.State.FINISHED,
            items=[["openapi", finished_bulk.task_id]],
        )
        drifted = old_task("running")
        Task.objects.filter(pk=drifted.pk).update(status="completed")
        resync = old_task("completed")
        Task.objects.filter(pk=resync.pk).update(resync_requested_at=NOW)
        disagreeing = old_operation("failed", terminal=False, effectState="failed")

        out = prune("--older-than", "90d")

        kept = {open_cancel.pk, uncertain.pk, listed.pk, drifted.pk, resync.pk}
        assert set(Task.objects.values_list("pk", flat=True)) == kept
        assert RuntimeOperation.objects.filter(pk=disagreeing.pk).exists()
        assert "kept 2 tasks: an open or unresolved cancel request refers to it" in out
        assert "kept 1 tasks: a queued or running bulk cancel lists it" in out
        assert "kept 1 operations: the upstream's terminal flag disagrees" in out
        assert CancelRequest.objects.count() == 3  # the console's own records stay

    def test_a_row_the_upstream_never_stamped_goes_by_our_clock(self):
        unstamped = make_task("completed", now=OLD)
        Task.objects.filter(pk=unstamped.pk).update(updated_at=None, mirrored_at=OLD)
        fresh = make_task("completed", now=OLD)
        Task.objects.filter(pk=fresh.pk).update(updated_at=None)  # mirrored just now
        prune("--older-than", "90d")
        assert list(Task.objects.values_list("pk", flat=True)) == [fresh.pk]


class TestRunning:
    def test_batches_of_two_over_five_rows_and_the_audit(self):
        tasks = [old_task("completed") for _ in range(5)]
        before = AuditEntry.objects.count()
        out = prune("--older-than", "12w", "--batch-size", "2")
        assert not Task.objects.exists()
        assert "Removed" in out and "5 tasks" in out and "3 batches of at most 2 rows" in out
        batches = AuditEntry.objects.filter(action="retention.pruned").order_by("seq")
        assert [len(entry.detail["ids"]) for entry in batches] == [2, 2, 1]
        assert {i for entry in batches for i in entry.detail["ids"]} == {
            f"openapi:{task.task_id}" for task in tasks
        }
        [run] = AuditEntry.objects.filter(action="retention.prune")
        assert (run.actor, run.actor_kind) == ("prune (command line)", "system")
        assert run.detail["removed"] == {
            "tasks": 5,
            "operations": 0,
            "messages": 0,
            "artifacts": 0,
            "events": 0,
        }
        assert run.detail["batches"] == 3 and run.detail["dry_run"] is False
        # Nothing of the audit log goes: the entries of the pruned tasks' writes stay.
        assert AuditEntry.objects.count() == before + 4
        assert counters() == recount()

    def test_dry_run_says_what_would_go_and_changes_nothing(self):
        task = old_task("failed")
        make_message(task, state="failed", stop_reason="error", created_at=iso(OLD))
        old_operation("expired", effectState="expired")
        before = snapshot()
        out = prune("--older-than", "90d", "--dry-run", "--batch-size", "1")
        assert "Dry run: would remove" in out
        assert "1 tasks, 1 operations, 1 messages, 0 artifacts, 0 events" in out
        assert snapshot() == before
        assert "Audited" not in out

    def test_a_run_with_nothing_to_remove_is_audited_too(self):
        make_task("completed")
        out = prune("--older-than", "2w")
        assert "Removed" in out and "0 tasks" in out
        [run] = AuditEntry.objects.filter(action="retention.prune")
        assert set(run.detail["removed"].values()) == {0}
        assert Task.objects.count() == 1

    def test_pages_still_fine_afterwards(self, client, admin_user):
        gone = old_task("completed")
        stays = make_task("running")
        prune("--older-than", "90d")
        client.force_login(admin_user)
        assert client.get("/").status_code == 200
        page = client.get("/tasks/").content.decode()
        assert stays.task_id in page and gone.task_id not in page
        assert client.get(f"/tasks/{gone.task_id}/").status_code == 404
        assert client.get("/audit/log/?action=retention.prune").status_code == 200


class TestInput:
    @pytest.mark.parametrize(
        ("text", "days"), [("90d", 90), ("12h", 0.5), ("2w", 14), (" 30M ", 30 / 1440)]
    )
    def test_periods(self, text, days):
        assert parse_period(text) == dt.timedelta(days=days)

    @pytest.mark.parametrize("text", ["90", "d", "0d", "-5d", "1.5d", "90 days", "99999w", ""])
    def test_nonsense_is_refused_clearly(self, text):
        with pytest.raises(CommandError, match="--older-than"):
            prune("--older-than", text)

    @pytest.mark.parametrize("size", ["0", "-1", "x", "10001"])
    def test_batch_size_is_checked(self, size):
        old_task("completed")
        with pytest.raises(CommandError, match="--batch-size"):
            prune("--older-than", "90d", "--batch-size", size)
        assert Task.objects.count() == 1
