"""The projection audit: drift, unmapped values, broken invariants, re-projection, the log."""

from __future__ import annotations

import csv
import io
import json
import re
from datetime import datetime, timedelta

import pytest
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from beeos_console.auditlog.models import AuditEntry
from beeos_console.auditlog.services import Actor
from beeos_console.cancels.gateways import ACCEPTED, Gateway, GatewayAnswer
from beeos_console.mirror.states import PROJECTION_VERSION
from beeos_console.projection import audit as projection_audit
from beeos_console.projection import reprojection
from beeos_console.projection.models import ProjectionJob
from operations.models import RuntimeOperation
from tasks.models import Message, Task
from tasks.services.cancel import cancel_task
from tasks.services.write import ingest_openapi_task, ingest_product_task

from .factories import FEEDER, iso, make_message, make_operation, make_task, openapi_task

pytestmark = pytest.mark.django_db
ADA = Actor("ada-admin")


def found(category: str) -> list[str]:
    report = projection_audit.sweep()
    return [e["id"] for e in report.categories[category].examples]


def run_command(*args: str) -> tuple[int, str]:
    out = io.StringIO()
    try:
        call_command("audit_projections", *args, stdout=out, stderr=io.StringIO())
    except SystemExit as exc:
        return int(exc.code), out.getvalue()
    return 0, out.getvalue()


class TestDriftAndVersions:
    def test_a_stored_projection_that_lies_is_drift(self):
        task = make_task("timeout")
        Task.objects.filter(pk=task.pk).update(status="completed", outcome_certainty="certain")
        report = projection_audit.sweep()
        drift = report.categories["drift"].examples
        assert [d["id"] for d in drift] == [task.task_id]
        assert drift[0]["drift"]["status"] == ["completed", "failed"]
        assert drift[0]["rule"] == "openapi:timeout"

    def test_reprojection_dry_run_then_apply_is_audited(self):
        task = make_task("timeout")
        Task.objects.filter(pk=task.pk).update(status="completed")
        op = make_operation("outcome_unknown")
        RuntimeOperation.objects.filter(pk=op.pk).update(outcome_certainty="certain")
        dry = reprojection.run(actor=ADA, apply=False)
        assert dry["total"] == 2 and not dry["applied"]
        assert Task.objects.get(pk=task.pk).status == "completed"  # a dry run writes nothing
        applied = reprojection.run(actor=ADA, apply=True)
        assert applied["total"] == 2
        assert Task.objects.get(pk=task.pk).status == "failed"
        assert RuntimeOperation.objects.get(pk=op.pk).outcome_certainty == "uncertain"
        entries = AuditEntry.objects.filter(action__endswith=".reprojected")
        assert {e.object_id for e in entries} == {task.task_id, op.operation_id}
        task_entry = entries.get(object_kind="task")
        assert (task_entry.before["status"], task_entry.after["status"]) == ("completed", "failed")
        assert reprojection.run(actor=ADA, apply=False)["total"] == 0

    def test_bumping_the_table_version_marks_older_rows(self):
        task = make_task("running")
        Task.objects.filter(pk=task.pk).update(projection_version=PROJECTION_VERSION - 1)
        assert found("outdated_version") == [task.task_id]
        assert found("drift") == []
        reprojection.reproject_row("task", task.pk, actor=ADA)
        assert Task.objects.get(pk=task.pk).projection_version == PROJECTION_VERSION
        assert found("outdated_version") == []

    def test_messages_are_audited_too(self):
        task = make_task("failed")
        message = make_message(task, state="failed", stop_reason="max_tokens")
        Message.objects.filter(pk=message.pk).update(reason="error")
        assert found("drift") == [message.message_id]


class TestUnmapped:
    def test_grouped_by_value_with_counts(self):
        for _ in range(3):
            make_task("paused_by_ops")
        make_task("ARCHIVED")
        report = projection_audit.sweep().to_json()
        groups = {(g["raw_value"], g["count"]) for g in report["unmapped_groups"]}
        assert groups == {("paused_by_ops", 3), ("ARCHIVED", 1)}


class TestInvariants:
    def test_terminal_task_contradicted_by_its_deciding_reply(self):
        task = make_task("completed")
        make_message(task, state="failed", stop_reason="error")
        report = projection_audit.sweep()
        [example] = report.categories["evidence_mismatch"].examples
        assert (example["id"], example["reply_says"]) == (task.task_id, "failed")

    def test_consistent_evidence_is_fine(self):
        task = make_task("canceled")
        make_message(task, state="cancelled", stop_reason="user_stop")
        assert found("evidence_mismatch") == []

    def test_completed_task_without_a_terminal_agent_reply(self):
        task = make_task("completed")
        make_message(task, state="streaming", stop_reason=None)
        assert found("no_terminal_reply") == [task.task_id]

    def test_completed_user_request_taken_as_completion(self):
        task = make_task("completed")
        make_message(task, type="chat_message", state="completed")
        assert found("user_request_as_completion") == [task.task_id]

    def test_succeeded_operation_whose_projection_is_not_synced(self):
        bad = make_operation("succeeded", projection={"revision": "3", "state": "pending"})
        make_operation("succeeded", projection={"revision": "3", "state": "synced"})
        make_operation("succeeded", projection={"revision": "3", "state": "not_applicable"})
        assert found("succeeded_not_synced") == [bad.operation_id]

    def test_projection_pending_older_than_the_threshold(self, settings):
        settings.CONSOLE_STUCK_AFTER_MINUTES = 30
        old = make_operation("projection_pending")
        make_operation("projection_pending")
        RuntimeOperation.objects.filter(pk=old.pk).update(
            updated_at=timezone.now() - timedelta(hours=2)
        )
        RuntimeOperation.objects.exclude(pk=old.pk).update(updated_at=timezone.now())
        assert found("projection_pending_stale") == [old.operation_id]

    def test_upstream_terminal_flag_disagreeing_with_our_table(self):
        op = make_operation("failed", terminal=False, effectState="failed")
        assert found("terminal_flag_mismatch") == [op.operation_id]


class TestNotesDoNotFail:
    def test_missing_evidence_and_producer_notes_are_listed_apart(self):
        silent = make_task("completed")
        british = make_task("cancelled")
        report = projection_audit.sweep()
        assert silent.task_id in [e["id"] for e in report.categories["missing_evidence"].examples]
        assert [e["id"] for e in report.categories["producer_note"].examples] == [british.task_id]
        assert not report.failing
        code, out = run_command()
        assert code == 0 and "all projections are true" in out


class TestCommand:
    def test_exit_1_and_every_format(self):
        make_task("paused_by_ops")
        code, out = run_command()
        assert code == 1 and "problems found" in out and "paused_by_ops" in out
        code, out = run_command("--format", "json")
        assert code == 1
        assert json.loads(out)["categories"]["unmapped"]["count"] == 1
        code, out = run_command("--format", "csv", "--chunk", "1")
        rows = list(csv.DictReader(io.StringIO(out)))
        assert code == 1
        assert [(r["category"], r["raw"]) for r in rows] == [("unmapped", "paused_by_ops")]

    def test_the_report_is_kept_for_the_page(self, client, admin_user):
        make_task("paused_by_ops")
        run_command()
        client.force_login(admin_user)
        html = client.get("/audit/projections/").content.decode()
        assert "audit_projections (command line)" in html and "problems found" in html
        run_command("--no-save")
        assert ProjectionJob.objects.count() == 1

    def test_streams_in_chunks(self):
        for _ in range(5):
            make_task("running")
        lines = []
        projection_audit.sweep(progress=lines.append, chunk=2)
        assert [line for line in lines if line.startswith("tasks")] == [
            "tasks: 2 scanned",
            "tasks: 4 scanned",
            "tasks: 5 scanned",
        ]


class TestPages:
    def test_admin_only(self, client, operator_user):
        client.force_login(operator_user)
        assert client.get("/audit/projections/").status_code == 403
        assert client.post("/audit/projections/jobs/", {"kind": "audit"}).status_code == 403

    @pytest.mark.django_db(transaction=True)
    def test_run_the_audit_from_the_page(self, client, admin_user):
        client.force_login(admin_user)
        make_task("paused_by_ops")
        response = client.post("/audit/projections/jobs/", {"kind": "audit"})
        job = ProjectionJob.objects.get()
        assert response["Location"] == f"/audit/projections/jobs/{job.pk}/"
        call_command("db_worker", "--batch", "--no-startup-delay", verbosity=0)
        job.refresh_from_db()
        assert job.state == "finished" and job.report["failing"]
        html = client.get("/audit/projections/").content.decode()
        assert "problems found" in html and "paused_by_ops" in html

    def test_reproject_one_object_dry_run_then_apply(self, client, admin_user):
        client.force_login(admin_user)
        task = make_task("rejected")
        Task.objects.filter(pk=task.pk).update(retry_policy="manual_review")
        page = client.get(f"/audit/projections/reproject/task/{task.pk}/").content.decode()
        assert "manual_review" in page and "safe_to_retry" in page
        assert Task.objects.get(pk=task.pk).retry_policy == "manual_review"
        client.post(f"/audit/projections/reproject/task/{task.pk}/")
        assert Task.objects.get(pk=task.pk).retry_policy == "safe_to_retry"
        entry = AuditEntry.objects.get(action="task.reprojected")
        assert entry.actor == admin_user.username

    def test_reproject_all_needs_its_confirmation(self, client, admin_user):
        client.force_login(admin_user)
        client.post("/audit/projections/jobs/", {"kind": "reproject"})
        assert ProjectionJob.objects.count() == 0


class TestAuditLog:
    def test_filters_and_csv_export_of_the_current_filter(self, client, admin_user):
        client.force_login(admin_user)
        AuditEntry.objects.create(
            actor="olga",
            action="task.cancel",
            object_kind="task",
            object_id="tsk_1",
            reason="stuck",
        )
        AuditEntry.objects.create(
            actor="sam", action="task.cancel", object_kind="task", object_id="tsk_2"
        )
        page = client.get("/audit/log/?actor=olga").content.decode()
        assert "tsk_1" in page and "tsk_2" not in page
        assert 'href="/audit/log/export.csv?actor=olga"' in page
        response = client.get("/audit/log/export.csv?actor=olga")
        lines = b"".join(response.streaming_content).decode().splitlines()
        # The last line states the row count (core.exports): "# 1 row".
        assert lines[-1] == "# 1 row"
        rows = list(csv.DictReader(io.StringIO("\n".join(lines[:-1]))))
        assert [(r["actor"], r["object_id"], r["reason"]) for r in rows] == [
            ("olga", "tsk_1", "stuck")
        ]

    def test_entries_cannot_be_edited_or_deleted_anywhere(self, client, admin_user):
        client.force_login(admin_user)
        entry = AuditEntry.objects.create(actor="x", action="y", object_kind="task", object_id="t")
        assert client.post("/audit/log/").status_code == 405
        change = f"/admin/console/auditentry/{entry.pk}/change/"
        assert client.post(change, {"reason": "rewritten"}).status_code == 403
        delete = f"/admin/console/auditentry/{entry.pk}/delete/"
        assert client.post(delete, {"post": "yes"}).status_code == 403
        assert client.post(
            "/admin/console/auditentry/",
            {"action": "delete_selected", "_selected_action": [entry.pk]},
        ).status_code in (200, 302, 403)
        assert AuditEntry.objects.filter(pk=entry.pk, reason="").exists()


# --- issue #11, "State truth" ------------------------------------------------------------


def op_error(code: str, effect: str, mode: str) -> dict[str, str]:
    return {"code": code, "message": code.lower(), "effectState": effect, "retryMode": mode}


class TestProducerDetails:
    def test_a_product_producers_failure_details_are_todays_projection(self):
        now = timezone.now()
        task = ingest_product_task(
            {
                "task_id": "job_export_7",
                "agent_id": "agt_billing",
                "status": "failed",
                "reason": "timeout",
                "outcome_certainty": "uncertain",
                "retry_policy": "manual_review",
                "created_at": now.isoformat(),
            },
            actor=Actor.feeder("billing"),
        ).obj
        assert (task.reason, task.outcome_certainty) == ("timeout", "uncertain")
        with CaptureQueriesContext(connection) as queries:
            assert found("drift") == []
        # Only the detail keys are read from payloads, never a whole payload.
        task_reads = [q["sql"] for q in queries if 'FROM "tasks_task"' in q["sql"]]
        assert task_reads and not any(re.search(r'"raw_payload"(?!\s*->)', s) for s in task_reads)
        # A stored projection that drops the producer's uncertainty is drift.
        Task.objects.filter(pk=task.pk).update(reason="error", outcome_certainty="certain")
        [example] = projection_audit.sweep().categories["drift"].examples
        assert example["drift"]["reason"] == ["error", "timeout"]
        assert example["drift"]["outcome_certainty"] == ["certain", "uncertain"]


class TestOperationEffectState:
    def test_an_old_overclaiming_projection_is_drift_until_reprojected(self):
        op = make_operation(
            "failed",
            effectState="outcome_unknown",
            error=op_error("INSTANCE_OFFLINE", "outcome_unknown", "resubmit"),
        )
        assert (op.outcome_certainty, op.retry_policy) == ("uncertain", "manual_review")
        # What table v1 stamped: certain and safe to retry, though the effect may have happened.
        RuntimeOperation.objects.filter(pk=op.pk).update(
            projection_version=1,
            outcome_certainty="certain",
            retry_policy="safe_to_retry",
            projection_rule="operation:failed+code+retry:resubmit",
        )
        report = projection_audit.sweep()
        [example] = report.categories["drift"].examples
        assert example["id"] == op.operation_id
        assert example["drift"]["retry_policy"] == ["safe_to_retry", "manual_review"]
        assert report.categories["outdated_version"].count == 0 and report.failing

        out = io.StringIO()
        call_command("reproject", "--outdated", stdout=out)
        assert "Dry run: 1 operations would change" in out.getvalue()
        assert RuntimeOperation.objects.get(pk=op.pk).projection_version == 1
        call_command("reproject", "--outdated", "--apply", stdout=io.StringIO())
        op.refresh_from_db()
        assert (op.outcome_certainty, op.retry_policy) == ("uncertain", "manual_review")
        assert op.projection_version == PROJECTION_VERSION
        entry = AuditEntry.objects.get(action="operation.reprojected")
        assert (entry.actor, entry.actor_kind) == ("reproject (command line)", "system")
        assert entry.before["retry_policy"] == "safe_to_retry"
        assert entry.after["retry_policy"] == "manual_review"
        assert not projection_audit.sweep().failing

    def test_the_error_objects_effect_state_counts_too(self):
        op = make_operation(
            "failed",
            effectState="failed",
            error=op_error("RUNTIME_EXECUTION_FAILED", "outcome_unknown", "resubmit"),
        )
        RuntimeOperation.objects.filter(pk=op.pk).update(
            outcome_certainty="certain",
            retry_policy="safe_to_retry",
            projection_rule="operation:failed+code+retry:resubmit",
        )
        [example] = projection_audit.sweep().categories["drift"].examples
        assert example["id"] == op.operation_id
        assert example["drift"]["outcome_certainty"] == ["certain", "uncertain"]

    def test_an_effect_state_no_table_knows_is_unmapped_beside_status(self):
        op = make_operation("failed", effectState="half_applied")
        report = projection_audit.sweep()
        [example] = report.categories["unmapped"].examples
        assert (example["id"], example["field"], example["value"]) == (
            op.operation_id,
            "effectState",
            "half_applied",
        )
        groups = report.to_json()["unmapped_groups"]
        assert [(g["kind"], g["protocol"], g["raw_value"]) for g in groups] == [
            ("operation", "effectState", "half_applied")
        ]
        code, out = run_command()
        assert code == 1 and "effectState 'half_applied'" in out


class TestProducerNotes:
    def test_every_non_canonical_spelling_is_a_note_not_drift(self, client, admin_user):
        upper = make_task("Completed")
        cancelled = make_task("canceled")
        reply = make_message(cancelled, state="canceled", stop_reason="user_stop")
        op = make_operation(
            "Succeeded", effectState="COMMITTED", projection={"revision": "2", "state": "synced"}
        )
        expired = make_operation(
            "expired",
            effectState="expired",
            error=op_error("COMMAND_EXPIRED", "expired", "Resubmit"),
        )
        report = projection_audit.sweep()
        notes = {e["id"]: e["note"] for e in report.categories["producer_note"].examples}
        assert notes == {
            upper.task_id: "letter case",
            reply.message_id: "foreign cancel spelling",
            op.operation_id: "status: letter case; effectState: letter case",
            expired.operation_id: "retryMode: letter case",
        }
        assert not report.failing and report.categories["drift"].count == 0
        assert run_command()[0] == 0
        client.force_login(admin_user)
        page = client.get("/audit/projections/").content.decode()
        assert "Producer notes" in page and "status: letter case; effectState: letter case" in page

    def test_operation_invariants_read_any_spelling(self, settings):
        settings.CONSOLE_STUCK_AFTER_MINUTES = 30
        unsynced = make_operation("Succeeded", projection={"revision": "3", "state": "pending"})
        make_operation("SUCCEEDED", projection={"revision": "3", "state": "Synced"})
        stale = make_operation("Projection_Pending", terminal=False)
        RuntimeOperation.objects.filter(pk=stale.pk).update(
            updated_at=timezone.now() - timedelta(hours=2)
        )
        report = projection_audit.sweep()
        assert [e["id"] for e in report.categories["succeeded_not_synced"].examples] == [
            unsynced.operation_id
        ]
        assert [e["id"] for e in report.categories["projection_pending_stale"].examples] == [
            stale.operation_id
        ]


class AcceptingUpstream(Gateway):
    """BeeOS answering 202: the cancel is accepted, its effect follows in a later snapshot."""

    name = "beeos"

    def cancel_task(self, task, *, idempotency_key: str, reason: str) -> GatewayAnswer:
        return GatewayAnswer(ACCEPTED, "BeeOS accepted the cancel.", 202)

    def cancel_operation(self, op, *, idempotency_key, reason, requested_by) -> GatewayAnswer:
        raise NotImplementedError

    def reread_task(self, task) -> None:
        """The next snapshot arrives by itself (the test ingests it)."""

    def reread_operation(self, op) -> None:
        raise NotImplementedError


def later(task, status: str, at: datetime, **extra) -> None:
    """A newer upstream snapshot of ``task`` (audited as a state change)."""
    ingest_openapi_task(
        openapi_task(status, task_id=task.task_id, updated_at=iso(at), **extra), actor=FEEDER
    )


class TestEvidenceRules:
    def test_a_reply_that_paused_the_task_decides_nothing(self):
        now = timezone.now()
        paused = make_task("input_required", now=now - timedelta(hours=2))
        make_message(paused, body="Which account?", created_at=iso(now - timedelta(hours=1)))
        later(paused, "timeout", now - timedelta(minutes=30))
        assert found("evidence_mismatch") == []
        # Paused by a change the mirror saw; a reply after the pause still decides.
        task = make_task("running", now=now - timedelta(hours=3))
        make_message(task, body="Which date?", created_at=iso(now - timedelta(hours=2)))
        later(task, "input_required", now - timedelta(hours=2) + timedelta(minutes=1))
        make_message(
            task, state="failed", stop_reason="error", created_at=iso(now + timedelta(minutes=1))
        )
        later(task, "completed", now + timedelta(minutes=2))
        report = projection_audit.sweep()
        [example] = report.categories["evidence_mismatch"].examples
        assert (example["id"], example["reply_says"]) == (task.task_id, "failed")

    def test_the_consoles_own_cancel_outranks_earlier_replies(self):
        now = timezone.now()
        task = make_task("running", now=now - timedelta(hours=1))
        make_message(
            task, state="failed", stop_reason="error", created_at=iso(now - timedelta(minutes=30))
        )
        fine = make_task("completed", now=now - timedelta(hours=1))
        make_message(fine, created_at=iso(now - timedelta(minutes=30)))
        with CaptureQueriesContext(connection) as queries:
            assert found("evidence_mismatch") == []  # not terminal yet: nothing to check
        assert not [q for q in queries if "console_auditentry" in q["sql"]]
        outcome = cancel_task("openapi", task.task_id, actor=Actor("olga"), reason="stuck")
        assert outcome.result == "cancelled"
        with CaptureQueriesContext(connection) as queries:
            report = projection_audit.sweep()
        assert not report.failing
        # The audit log is read once, for the one task the cheap check doubted.
        assert len([q for q in queries if "console_auditentry" in q["sql"]]) == 1

    def test_an_accepted_console_cancel_counts_by_the_consoles_clock(self):
        now = timezone.now()
        task = make_task("running", now=now - timedelta(hours=2))
        make_message(task, created_at=iso(now - timedelta(minutes=30)))
        outcome = cancel_task(
            "openapi", task.task_id, actor=Actor("olga"), reason="stuck", gw=AcceptingUpstream()
        )
        assert outcome.result == "cancel_requested"
        # The upstream's snapshot is stamped by a clock behind the agent's reply.
        later(task, "canceled", now - timedelta(hours=1))
        assert found("evidence_mismatch") == []

    def test_an_upstream_cancel_outranks_replies_written_before_it(self):
        now = timezone.now()
        at = now - timedelta(hours=1)
        early = make_task("canceled", now=now - timedelta(hours=2), updated_at=iso(at))
        make_message(early, created_at=iso(at - timedelta(minutes=20)))
        assert found("evidence_mismatch") == []
        # A reply finished after the cancel is still evidence against it.
        late = make_task("canceled", now=now - timedelta(hours=2), updated_at=iso(at))
        make_message(late, created_at=iso(at + timedelta(minutes=20)))
        assert found("evidence_mismatch") == [late.task_id]
