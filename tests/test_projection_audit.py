"""The projection audit: drift, unmapped values, broken invariants, re-projection, the log."""

from __future__ import annotations

import csv
import io
import json
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone

from beeos_console import projection_audit, reprojection
from beeos_console.audit import Actor
from beeos_console.models import AuditEntry, ProjectionJob
from beeos_console.states import PROJECTION_VERSION
from operations.models import RuntimeOperation
from tasks.models import Message, Task

from .factories import make_message, make_operation, make_task

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
        assert [e["id"] for e in report.categories["producer_spelling"].examples] == [
            british.task_id
        ]
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
        rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
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
