"""`seed_demo` covers every vocabulary value, makes the demo users, and is idempotent."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from beeos_console.auditlog.models import AuditEntry
from beeos_console.auditlog.services import Actor
from beeos_console.cancels import bulk
from beeos_console.cancels.models import CancelRequest
from beeos_console.demo.builder import (
    A2A_LOST_CANCEL_KEY,
    LOST_AFTER_DISPATCH_REASON,
    UNMAPPED_DEMO_VALUES,
)
from beeos_console.mirror.states import PROJECTION_VERSION
from beeos_console.projection import audit as projection_audit
from operations import states as op_states
from operations.models import RuntimeOperation, RuntimeOperationEvent
from tasks import states as task_states
from tasks.filtersets import TaskFilterSet
from tasks.models import Message, Task

from .shared_db import rolled_back_at_end

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def seeded(django_db_setup, django_db_blocker) -> Iterator[str]:
    """Seeded once for the module; each test's writes (a second run, a re-projection, a
    bulk cancel) are rolled back after it, and the seeding after the last test."""
    with rolled_back_at_end(django_db_blocker):
        out = StringIO()
        call_command("seed_demo", stdout=out)
        yield out.getvalue()


def counts() -> dict[str, int]:
    return {
        "tasks": Task.objects.count(),
        "messages": Message.objects.count(),
        "operations": RuntimeOperation.objects.count(),
        "events": RuntimeOperationEvent.objects.count(),
        "audit": AuditEntry.objects.count(),
        "users": get_user_model().objects.count(),
    }


def test_second_run_duplicates_nothing_and_loses_nothing(seeded):
    first = counts()
    assert first["tasks"] >= 200 and first["operations"] >= 100
    out = StringIO()
    call_command("seed_demo", stdout=out)
    assert counts() == first
    assert "created" not in out.getvalue().split("Demo data ready")[1]
    assert "password unchanged" in out.getvalue()


def test_demo_users_get_their_roles_and_passwords_once(seeded):
    User = get_user_model()
    assert seeded.count("with password:") == 3
    assert User.objects.get(username="admin").is_superuser
    for name in ("admin", "operator", "support"):
        assert User.objects.get(username=name).groups.filter(name=name).exists()


def test_every_raw_value_of_every_vocabulary_is_present(seeded):
    openapi = set(Task.objects.filter(protocol="openapi").values_list("raw_state", flat=True))
    assert set(task_states.OPENAPI_WIRE_VALUES) <= openapi
    a2a = set(Task.objects.filter(protocol="a2a").values_list("raw_state", flat=True))
    a2a_json = {task_states.A2A_ENUM_TO_JSON.get(v, v) for v in a2a}
    assert set(task_states.A2A_JSON_VALUES) | set(task_states.A2A_INTERNAL_VALUES) <= a2a_json
    assert a2a & set(task_states.A2A_ENUM_TO_JSON), "some A2A tasks use the v1 enum names"
    product = set(Task.objects.filter(protocol="product").values_list("raw_state", flat=True))
    assert set(task_states.PRODUCT_TABLE) <= product
    assert set(task_states.MESSAGE_STATES) <= set(Message.objects.values_list("state", flat=True))
    stops = set(Message.objects.values_list("stop_reason", flat=True))
    assert set(task_states.STOP_REASONS) <= stops
    ops = RuntimeOperation.objects
    assert set(op_states.STATUSES) <= set(ops.values_list("raw_status", flat=True))
    assert set(op_states.EFFECT_STATES) <= set(ops.values_list("effect_state", flat=True))
    assert set(op_states.PROJECTION_STATES) <= set(ops.values_list("projection_state", flat=True))
    assert set(op_states.RETRY_MODES) <= set(ops.values_list("error_retry_mode", flat=True))


def test_unmapped_values_come_only_when_asked_for(seeded):
    assert not Task.objects.filter(status="unmapped").exists()
    assert not RuntimeOperation.objects.filter(status="unmapped").exists()
    call_command("seed_demo", "--with-unmapped", "--no-users", stdout=StringIO())
    assert Task.objects.filter(status="unmapped").exists()
    assert RuntimeOperation.objects.filter(status="unmapped").exists()
    report = projection_audit.sweep()
    # The audit fails on exactly those values, and on nothing else.
    assert [n for n in projection_audit.FAILING if report.categories[n].count] == ["unmapped"]
    shown = {(g["protocol"], g["raw_value"]) for g in report.to_json()["unmapped_groups"]}
    assert shown == {(p, v) for p, values in UNMAPPED_DEMO_VALUES.items() for v in values}
    assert audit_exit_code() == 1


def test_demo_has_the_situations_operators_meet(seeded):
    assert Task.objects.filter(outcome_certainty="uncertain").exists()
    assert Task.objects.filter(raw_state__in=["cancelled", "TASK_STATE_CANCELLED"]).exists()
    # Stuck: processing and started more than two hours before the demo's "now".
    newest = Task.objects.order_by("-created_at").values_list("created_at", flat=True).first()
    assert Task.objects.filter(
        status="processing", created_at__lt=newest - timedelta(hours=2)
    ).exists()
    replies = Message.objects.filter(type="agent_reply", task__isnull=False)
    assert replies.filter(state="completed", task__status="completed").exists()
    assert Message.objects.filter(body__contains="<script>").exists()


# --- issue #11, "State truth" ------------------------------------------------------------


def test_demo_shows_the_state_truth_cases(seeded):
    ops = RuntimeOperation.objects
    unknown = ops.get(
        raw_status="failed", effect_state="outcome_unknown", error_retry_mode="resubmit"
    )
    assert (unknown.outcome_certainty, unknown.retry_policy) == ("uncertain", "manual_review")
    committed = ops.get(raw_status="failed", effect_state="committed")
    assert (committed.outcome_certainty, committed.retry_policy) == ("certain", "manual_review")
    cancelled = ops.get(raw_status="cancelled", effect_state="committed")
    assert (cancelled.status, cancelled.reason) == ("cancelled", "effect_committed")
    product = Task.objects.get(protocol="product", raw_state="failed", reason="timeout")
    assert (product.outcome_certainty, product.retry_policy) == ("uncertain", "manual_review")
    assert Message.objects.get(state="canceled").is_terminal
    # Accepted spellings the audit lists as producer notes.
    assert Task.objects.filter(protocol="openapi", raw_state="Completed").exists()
    assert ops.filter(effect_state="COMMITTED").exists()

    # Paused on the caller (with the agent reply that asked), then cancelled.
    change = AuditEntry.objects.get(
        action="task.state_changed", before__reason="input_required", after__status="cancelled"
    )
    paused = Task.objects.get(protocol="openapi", task_id=change.object_id)
    assert paused.messages.filter(type="agent_reply", state="completed").exists()

    # An A2A cancel lost after dispatch: uncertain, its upstream answer kept.
    request = CancelRequest.objects.get(idempotency_key=A2A_LOST_CANCEL_KEY)
    assert (request.state, request.object_kind, request.protocol) == ("uncertain", "task", "a2a")
    assert request.upstream["a2a_code"] == "-32010"
    assert request.upstream["reason"] == LOST_AFTER_DISPATCH_REASON
    assert "do not resend" in request.upstream["body"]["error"]["message"]
    assert "not resent" in request.message
    a2a = Task.objects.get(protocol="a2a", task_id=request.object_id)
    assert a2a.status == "processing"
    entry = AuditEntry.objects.get(action="task.cancel", object_id=a2a.task_id)
    assert entry.detail["result"] == "uncertain"


def test_seed_demo_reprojects_rows_an_older_table_stamped(seeded):
    op = RuntimeOperation.objects.get(
        raw_status="failed", effect_state="outcome_unknown", error_retry_mode="resubmit"
    )
    # What table v1 stamped: certain and safe to retry.
    RuntimeOperation.objects.filter(pk=op.pk).update(
        projection_version=1,
        outcome_certainty="certain",
        retry_policy="safe_to_retry",
        projection_rule="operation:failed+code+retry:resubmit",
    )
    drift = projection_audit.sweep().categories["drift"].examples
    assert [e["id"] for e in drift] == [op.operation_id]
    out = StringIO()
    call_command("seed_demo", stdout=out)
    assert "Re-projected 1 rows stamped before table" in out.getvalue()
    op.refresh_from_db()
    assert (op.outcome_certainty, op.retry_policy) == ("uncertain", "manual_review")
    assert op.projection_version == PROJECTION_VERSION
    entry = AuditEntry.objects.get(action="operation.reprojected", object_id=op.operation_id)
    assert (entry.actor, entry.actor_kind) == ("seed_demo", "system")
    assert projection_audit.sweep().categories["drift"].count == 0


def audit_exit_code() -> int:
    try:
        call_command("audit_projections", "--no-save", stdout=StringIO(), stderr=StringIO())
    except SystemExit as exc:
        return int(exc.code)
    return 0


def test_the_audit_passes_on_the_demo_and_after_the_consoles_bulk_cancel(seeded, settings):
    settings.BEEOS_API_URL = ""  # the local gateway applies the cancels
    # Freshly seeded demo data passes the projection audit.
    assert audit_exit_code() == 0

    stuck = TaskFilterSet(
        {"stuck": str(settings.CONSOLE_STUCK_AFTER_MINUTES)}, queryset=Task.objects.all()
    ).qs
    selection = bulk.preview("task", stuck)
    assert selection.count >= 20
    batch = bulk.start(selection, actor=Actor("operator"), reason="stuck cleanup", query="stuck")
    results = bulk.run_bulk_cancel.call(batch.pk)
    # The demo's A2A task whose earlier cancel is uncertain may be refused (never resent).
    assert results.get("cancelled", 0) + results.get("already_requested", 0) == selection.count
    assert results.get("already_requested", 0) <= 1 and results["cancelled"] >= 20
    # Some of them held an agent reply that said otherwise (it paused the task).
    picked = [task_id for _protocol, task_id in selection.items]
    assert Message.objects.filter(
        task__task_id__in=picked, task__status="cancelled", type="agent_reply", state="completed"
    ).exists()
    assert audit_exit_code() == 0
