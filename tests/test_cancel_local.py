"""Cancel rules on the local (demo) gateway, on PostgreSQL."""

from __future__ import annotations

import pytest

from beeos_console.auditlog.models import AuditEntry
from beeos_console.auditlog.services import Actor
from beeos_console.cancels.engine import InvalidCancel
from beeos_console.cancels.gateways import LocalGateway
from beeos_console.cancels.models import CancelRequest
from operations.services.cancel import cancel_operation
from tasks.services.cancel import cancel_task

from .factories import make_a2a_task, make_operation, make_task

pytestmark = pytest.mark.django_db
OLGA = Actor("olga-operator")


def cancel(task, **kw):
    kw.setdefault("reason", "customer asked to stop")
    return cancel_task(task.protocol, task.task_id, actor=OLGA, gw=LocalGateway(), **kw)


@pytest.mark.parametrize(
    ("protocol", "raw", "spelling"),
    [
        ("openapi", "running", "canceled"),
        ("openapi", "input_required", "canceled"),
        ("openapi", "queued", "canceled"),
        ("a2a", "TASK_STATE_WORKING", "TASK_STATE_CANCELED"),
        ("a2a", "working", "canceled"),
        ("a2a", "submitted", "canceled"),
    ],
)
def test_cancellable_task_gets_its_protocols_spelling(protocol, raw, spelling):
    task = make_task(raw) if protocol == "openapi" else make_a2a_task(raw)
    outcome = cancel(task)
    assert outcome.result == "cancelled", outcome.message
    task.refresh_from_db()
    assert (task.raw_state, task.status) == (spelling, "cancelled")


@pytest.mark.parametrize("raw", ["completed", "failed", "canceled", "timeout", "rejected"])
def test_terminal_task_is_refused_in_words_and_nothing_changes(raw):
    task = make_task(raw)
    outcome = cancel(task)
    assert outcome.result == "refused"
    # Issue #14: the refusal says how it ended in words, never the rule syntax.
    assert "already ended" in outcome.message and f"({task.status}" in outcome.message
    assert "`" not in outcome.message and task.projection_rule not in outcome.message
    task.refresh_from_db()
    assert task.raw_state == raw


def test_unmapped_task_is_refused():
    outcome = cancel(make_task("paused_by_ops"))
    assert outcome.result == "refused" and "unmapped" in outcome.message


def test_every_attempt_writes_one_audit_entry_with_before_and_after():
    running, done = make_task("running"), make_task("completed")
    cancel(running, idempotency_key="k-1")
    cancel(done, idempotency_key="k-2")
    entries = {e.object_id: e for e in AuditEntry.objects.filter(action="task.cancel")}
    accepted, refused = entries[running.task_id], entries[done.task_id]
    assert accepted.before["raw_state"] == "running"
    assert accepted.after["raw_state"] == "canceled"
    assert accepted.detail["result"] == "cancelled"
    assert accepted.detail["idempotency_key"] == "k-1"
    assert accepted.reason == "customer asked to stop"
    assert refused.detail["result"] == "refused"
    assert refused.before == refused.after


def test_a_double_click_is_one_request():
    task = make_task("running")
    first = cancel(task, idempotency_key="same-key")
    second = cancel(task, idempotency_key="same-key")
    assert first.result == "cancelled"
    assert second.replayed and second.result == "cancelled"
    assert CancelRequest.objects.count() == 1
    assert AuditEntry.objects.filter(action="task.cancel").count() == 1


def test_reason_is_required_and_nothing_is_recorded():
    task = make_task("running")
    with pytest.raises(InvalidCancel, match="reason is required"):
        cancel(task, reason="   ")
    assert CancelRequest.objects.count() == 0
    task.refresh_from_db()
    assert task.raw_state == "running"


class TestOperations:
    def test_queued_or_running_is_cancelled_with_a_cancel_request(self):
        op = make_operation("running")
        outcome = cancel_operation(
            op.operation_id, actor=OLGA, reason="wrong model", gw=LocalGateway()
        )
        assert outcome.result == "cancelled"
        op.refresh_from_db()
        assert (op.raw_status, op.effect_state, op.status) == (
            "cancelled",
            "cancelled",
            "cancelled",
        )
        assert (op.cancel_requested_by, op.cancel_reason) == ("olga-operator", "wrong model")

    @pytest.mark.parametrize(
        ("raw", "words"),
        [
            ("runtime_committed", "already happened"),
            ("projection_pending", "already happened"),
            ("projection_blocked", "already happened"),
            ("succeeded", "already happened"),
            ("outcome_unknown", "replay is unsafe"),
            ("failed", "already ended"),
            ("expired", "already ended"),
        ],
    )
    def test_from_commit_on_it_is_refused(self, raw, words):
        op = make_operation(raw)
        outcome = cancel_operation(op.operation_id, actor=OLGA, reason="x", gw=LocalGateway())
        assert outcome.result == "refused"
        assert words in outcome.message
        op.refresh_from_db()
        assert op.raw_status == raw

    def test_existing_cancel_request_means_no_second_request(self):
        op = make_operation(
            "running",
            cancelRequest={
                "requestedBy": "usr_ana",
                "reason": "first",
                "requestedAt": "2026-11-30T08:00:00Z",
            },
        )
        outcome = cancel_operation(op.operation_id, actor=OLGA, reason="again", gw=LocalGateway())
        assert outcome.result == "already_requested"
        assert "usr_ana" in outcome.message
        op.refresh_from_db()
        assert op.raw_status == "running"
