"""The mirror's write paths on PostgreSQL: projection stamping, ordering, bad input."""

from __future__ import annotations

import copy
import random

import pytest

from beeos_console.auditlog.models import AuditEntry
from beeos_console.mirror.edge import IngestError, Outcome
from beeos_console.mirror.states import PROJECTION_VERSION
from operations.models import RuntimeOperation, RuntimeOperationEvent
from operations.services.write import ingest_runtime_operation, ingest_runtime_operation_event
from tasks.models import Artifact, Message, Task
from tasks.services.write import (
    ingest_a2a_task,
    ingest_message,
    ingest_openapi_task,
    ingest_product_task,
)

pytestmark = pytest.mark.django_db


def openapi_task(status: str = "running", **extra) -> dict:
    data = {
        "task_id": "tsk_9QnR2m7TbWcY4pLs8DkE1a",
        "agent_id": "agt_Fz3Kq8LmW2Xv",
        "caller_id": "usr_b7Tn2QwErY",
        "status": status,
        "created_at": "2026-11-30T08:00:00Z",
        "started_at": "2026-11-30T08:00:02Z",
        "metadata": {"agent_name": "support-triage"},
    }
    data.update(extra)
    return data


def operation(status: str = "running", sequence: str = "3", **extra) -> dict:
    data = {
        "id": "op_7kPq2XbN9mTzR4sLw1VcYd8e",
        "instanceId": "ins_Qm4Xz8Lp2W",
        "target": {"scope": "agent", "platformAgentId": "agt_Fz3Kq8LmW2Xv"},
        "method": "session/set_model",
        "capability": "conversation.control",
        "transport": "service",
        "sequence": sequence,
        "createdAt": "2026-11-30T08:00:00Z",
        "updatedAt": f"2026-11-30T08:00:{int(sequence):02d}Z",
        "status": status,
        "effectState": {"queued": "queued", "running": "running"}.get(status, "committed"),
        "terminal": status not in ("queued", "running", "runtime_committed", "projection_pending"),
    }
    data.update(extra)
    return data


class TestTaskWrites:
    def test_create_stamps_projection_next_to_raw_state(self, feeder):
        result = ingest_openapi_task(openapi_task("timeout"), actor=feeder)
        assert result.outcome == Outcome.CREATED
        task = Task.objects.get()
        assert task.raw_state == "timeout"
        assert (task.status, task.reason, task.outcome_certainty, task.retry_policy) == (
            "failed",
            "timeout",
            "uncertain",
            "manual_review",
        )
        assert task.projection_rule == "openapi:timeout"
        assert task.projection_version == PROJECTION_VERSION
        assert task.raw_payload["status"] == "timeout"

    def test_same_snapshot_twice_changes_nothing(self, feeder):
        ingest_openapi_task(openapi_task(), actor=feeder)
        before = Task.objects.get()
        again = ingest_openapi_task(openapi_task(), actor=feeder)
        assert again.outcome == Outcome.UNCHANGED
        assert Task.objects.get().mirrored_at == before.mirrored_at
        assert AuditEntry.objects.count() == 0

    def test_newer_snapshot_updates_and_audits_status_change(self, feeder):
        ingest_openapi_task(openapi_task("running"), actor=feeder)
        done = openapi_task("completed", completed_at="2026-11-30T08:03:00Z", result={"text": "ok"})
        assert ingest_openapi_task(done, actor=feeder).outcome == Outcome.UPDATED
        task = Task.objects.get()
        assert (task.raw_state, task.status) == ("completed", "completed")
        entry = AuditEntry.objects.get()
        assert entry.actor == "feeder-test"
        assert entry.actor_kind == "feeder"
        assert entry.before["status"] == "processing"
        assert entry.after["status"] == "completed"

    def test_older_snapshot_never_overwrites_newer(self, feeder):
        ingest_openapi_task(
            openapi_task("completed", completed_at="2026-11-30T08:03:00Z"), actor=feeder
        )
        stale = openapi_task("running", updated_at="2026-11-30T08:01:00Z")
        assert ingest_openapi_task(stale, actor=feeder).outcome == Outcome.STALE
        assert Task.objects.get().raw_state == "completed"

    def test_terminal_never_goes_back_even_with_a_newer_timestamp(self, feeder):
        ingest_openapi_task(
            openapi_task("canceled", completed_at="2026-11-30T08:03:00Z"), actor=feeder
        )
        later_running = openapi_task("running", updated_at="2026-11-30T09:00:00Z")
        assert ingest_openapi_task(later_running, actor=feeder).outcome == Outcome.STALE
        assert Task.objects.get().status == "cancelled"

    def test_unknown_state_is_stored_raw_and_projected_unmapped(self, feeder):
        ingest_openapi_task(openapi_task("paused_by_ops"), actor=feeder)
        task = Task.objects.get()
        assert task.raw_state == "paused_by_ops"
        assert task.status == "unmapped"
        assert task.projection_rule == "openapi:unmapped"

    def test_product_legacy_value(self, feeder):
        ingest_product_task(
            {"task_id": "job_1", "status": "uncertain", "updated_at": "2026-11-30T08:00:00Z"},
            actor=feeder,
        )
        task = Task.objects.get(protocol="product")
        assert (task.status, task.reason, task.outcome_certainty) == (
            "failed",
            "outcome_unknown",
            "uncertain",
        )

    def test_id_over_256_characters_is_refused_and_nothing_saved(self, feeder):
        with pytest.raises(IngestError) as err:
            ingest_openapi_task(openapi_task(task_id="t" * 257), actor=feeder)
        assert "at most 256" in str(err.value)
        assert "task_id" in err.value.errors
        assert Task.objects.count() == 0

    def test_every_field_error_is_reported_at_once(self, feeder):
        with pytest.raises(IngestError) as err:
            ingest_openapi_task({"task_id": 5, "created_at": "yesterday"}, actor=feeder)
        assert set(err.value.errors) == {"task_id", "agent_id", "status", "created_at"}

    def test_not_an_object(self, feeder):
        with pytest.raises(IngestError):
            ingest_openapi_task(["not", "an", "object"], actor=feeder)

    def test_shuffled_duplicated_stream_converges_to_newest(self, feeder):
        lifecycle = [
            openapi_task("queued", started_at=None, updated_at="2026-11-30T08:00:00Z"),
            openapi_task("running", updated_at="2026-11-30T08:00:02Z"),
            openapi_task("input_required", updated_at="2026-11-30T08:00:30Z"),
            openapi_task("running", updated_at="2026-11-30T08:01:00Z"),
            openapi_task(
                "completed",
                updated_at="2026-11-30T08:02:00Z",
                completed_at="2026-11-30T08:02:00Z",
            ),
        ]
        rng = random.Random(7)
        for _ in range(5):
            Task.objects.all().delete()
            stream = [copy.deepcopy(s) for s in lifecycle * 3]
            rng.shuffle(stream)
            for snapshot in stream:
                ingest_openapi_task(snapshot, actor=feeder)
            task = Task.objects.get()
            assert (task.raw_state, task.status) == ("completed", "completed")


class TestA2AWrites:
    def view(self, state: str = "TASK_STATE_WORKING", **extra) -> dict:
        data = {
            "id": "a2a_Xr8Qm2Lp4TzW9kVb",
            "contextId": "ctx_Hq2Wm8Zp",
            "status": {"state": state, "timestamp": "2026-11-30T08:00:05Z"},
            "caller_principal_id": "prn_1",
            "caller_agent_id": "agt_caller",
            "caller_owner_id": "usr_owner",
            "target_principal_id": "prn_2",
            "target_agent_id": "agt_target",
            "target_owner_id": "usr_target_owner",
            "history": [
                {"messageId": "m1", "role": "user", "parts": [{"text": "Plan my trip"}]},
            ],
        }
        data.update(extra)
        return data

    def test_enum_spelling_with_history_and_artifacts(self, feeder):
        view = self.view(
            "TASK_STATE_COMPLETED",
            artifacts=[{"artifactId": "art_1", "name": "plan.md", "parts": [{"text": "Day 1"}]}],
        )
        assert ingest_a2a_task(view, actor=feeder).outcome == Outcome.CREATED
        task = Task.objects.get()
        assert (task.protocol, task.raw_state, task.status) == (
            "a2a",
            "TASK_STATE_COMPLETED",
            "completed",
        )
        assert task.agent_id == "agt_target"
        assert Artifact.objects.get().name == "plan.md"
        assert list(task.messages.values_list("body", flat=True)) == ["Plan my trip"]

    def test_missing_status_is_refused(self, feeder):
        view = self.view()
        del view["status"]
        with pytest.raises(IngestError) as err:
            ingest_a2a_task(view, actor=feeder)
        assert "status" in err.value.errors
        assert Task.objects.count() == 0 and Message.objects.count() == 0

    def test_unspecified_is_unmapped(self, feeder):
        ingest_a2a_task(self.view("TASK_STATE_UNSPECIFIED"), actor=feeder)
        assert Task.objects.get().status == "unmapped"


class TestMessageWrites:
    def envelope(self, state="streaming", **extra) -> dict:
        data = {
            "id": "msg_Zq81",
            "conversation_id": "tsk_9QnR2m7TbWcY4pLs8DkE1a",
            "type": "agent_reply",
            "sender": "agt_Fz3Kq8LmW2Xv",
            "body": "Working on it",
            "state": state,
            "created_at": "2026-11-30T08:00:03Z",
            "updated_at": "2026-11-30T08:00:03Z",
        }
        data.update(extra)
        return data

    def test_message_before_its_task_is_linked_when_the_task_arrives(self, feeder):
        ingest_message(self.envelope(), actor=feeder)
        assert Message.objects.get().task is None
        ingest_openapi_task(openapi_task(), actor=feeder)
        assert Message.objects.get().task == Task.objects.get()

    def test_terminal_envelope_is_immutable(self, feeder):
        ingest_message(
            self.envelope("completed", stop_reason="end_turn", updated_at="2026-11-30T08:01:00Z"),
            actor=feeder,
        )
        late = self.envelope("failed", stop_reason="agent_lost", updated_at="2026-11-30T08:05:00Z")
        assert ingest_message(late, actor=feeder).outcome == Outcome.STALE
        assert Message.objects.get().state == "completed"

    def test_failed_reply_takes_its_stop_reason_as_reason(self, feeder):
        ingest_message(self.envelope("failed", stop_reason="max_tokens"), actor=feeder)
        message = Message.objects.get()
        assert (message.status, message.reason) == ("failed", "max_tokens")


class TestOperationWrites:
    def test_create_keeps_every_internal_value(self, feeder):
        snapshot = operation(
            "failed",
            sequence="9",
            effectState="failed",
            error={
                "code": "INSTANCE_OFFLINE",
                "message": "Instance offline",
                "operationId": "op_7kPq2XbN9mTzR4sLw1VcYd8e",
                "effectState": "failed",
                "retryMode": "resubmit",
                "context": {"lastSeenAt": "2026-11-30T07:40:00Z"},
            },
            projection={"revision": "12", "state": "not_applicable"},
        )
        ingest_runtime_operation(snapshot, actor=feeder)
        op = RuntimeOperation.objects.get()
        assert (op.raw_status, op.effect_state, op.projection_state) == (
            "failed",
            "failed",
            "not_applicable",
        )
        assert (op.error_code, op.error_retry_mode) == ("INSTANCE_OFFLINE", "resubmit")
        assert op.error_context == {"lastSeenAt": "2026-11-30T07:40:00Z"}
        assert (op.status, op.reason, op.outcome_certainty, op.retry_policy) == (
            "failed",
            "INSTANCE_OFFLINE",
            "certain",
            "safe_to_retry",
        )
        assert op.projection_revision == 12

    def test_lower_sequence_is_stale(self, feeder):
        ingest_runtime_operation(operation("projection_pending", sequence="7"), actor=feeder)
        result = ingest_runtime_operation(operation("running", sequence="4"), actor=feeder)
        assert result.outcome == Outcome.STALE
        assert RuntimeOperation.objects.get().raw_status == "projection_pending"

    def test_terminal_status_never_regresses(self, feeder):
        ingest_runtime_operation(operation("outcome_unknown", sequence="7"), actor=feeder)
        result = ingest_runtime_operation(operation("running", sequence="8"), actor=feeder)
        assert result.outcome == Outcome.STALE

    def test_status_change_is_audited(self, feeder):
        ingest_runtime_operation(operation("running", sequence="3"), actor=feeder)
        ingest_runtime_operation(operation("runtime_committed", sequence="5"), actor=feeder)
        entry = AuditEntry.objects.get(object_kind="operation")
        assert (entry.before["raw_status"], entry.after["raw_status"]) == (
            "running",
            "runtime_committed",
        )

    def test_bad_sequence_and_missing_target_are_refused(self, feeder):
        bad = operation(sequence="-1")
        del bad["target"]
        with pytest.raises(IngestError) as err:
            ingest_runtime_operation(bad, actor=feeder)
        assert {"sequence", "target"} <= set(err.value.errors)
        assert RuntimeOperation.objects.count() == 0

    def test_events_link_to_their_operation_in_either_order(self, feeder):
        event = {
            "id": "1001",
            "operationId": "op_7kPq2XbN9mTzR4sLw1VcYd8e",
            "method": "session/set_model",
            "event": {
                "type": "runtime_operation_started",
                "sequence": "1",
                "recordedAt": "2026-11-30T08:00:01Z",
            },
        }
        assert ingest_runtime_operation_event(event, actor=feeder).outcome == Outcome.CREATED
        assert ingest_runtime_operation_event(event, actor=feeder).outcome == Outcome.UNCHANGED
        ingest_runtime_operation(operation(), actor=feeder)
        assert RuntimeOperationEvent.objects.get().operation == RuntimeOperation.objects.get()
