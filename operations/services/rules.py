"""The storage rules for runtime operations and their events, pure (no database).

Ordering: the operation ``sequence`` (then ``updatedAt``) decides which
snapshot is newer; a terminal status never goes back; the same snapshot twice
changes nothing; an event is immutable once stored. Both write paths
(``write``, one record; ``batch``, many) ask the same functions here.
"""

from __future__ import annotations

from typing import Any

from django.utils.translation import gettext

from beeos_console.mirror import counters
from beeos_console.mirror.edge import Outcome, clock_note, is_older
from beeos_console.mirror.states import Projection
from operations import states
from operations.models import RuntimeOperation, RuntimeOperationEvent

from .snapshots import EventSnapshot, OperationSnapshot, project_operation

# The maintained counters an operation is counted under (the registry's ``counters``):
# by display status, and by raw status (the dashboard's "needs attention" chart).
COUNTERS: counters.Counted = {
    counters.OPERATION: "status",
    counters.OPERATION_RAW: "raw_status",
}


def project_operation_row(op: RuntimeOperation) -> Projection:
    """What today's rules give for a stored operation row."""
    return project_operation(
        {
            "raw_status": op.raw_status,
            "error_code": op.error_code,
            "error_retry_mode": op.error_retry_mode,
            "effect_state": op.effect_state,
            "projection_state": op.projection_state,
            "error_effect_state": op.error_effect_state,
        }
    )


def state_summary(op: RuntimeOperation) -> dict[str, Any]:
    """The state fields an audit entry keeps before and after a change."""
    return {
        "raw_status": op.raw_status,
        "effect_state": op.effect_state,
        "projection_state": op.projection_state,
        "status": op.status,
        "reason": op.reason,
        "outcome_certainty": op.outcome_certainty,
        "retry_policy": op.retry_policy,
    }


def decide_operation(
    snapshot: OperationSnapshot, op: RuntimeOperation | None
) -> tuple[Outcome, str]:
    """Pure: what the storage rules make of a snapshot against the stored row.

    Newer is a higher ``sequence``, then (same sequence) a later ``updatedAt``
    by ``is_older`` (a stamp in the future, clock skew, counts as now + skew).
    """
    fields = snapshot.fields
    if op is None:
        return Outcome.CREATED, clock_note(fields["updated_at"])
    if op.payload_digest == snapshot.payload_digest:
        return Outcome.UNCHANGED, ""
    if fields["sequence"] < op.sequence or (
        fields["sequence"] == op.sequence and is_older(fields["updated_at"], op.updated_at)
    ):
        return Outcome.STALE, gettext("older than the stored snapshot")
    if states.is_terminal(op.raw_status) and not states.is_terminal(fields["raw_status"]):
        return Outcome.STALE, gettext("a terminal status never goes back")
    return Outcome.UPDATED, clock_note(fields["updated_at"])


def new_operation(snapshot: OperationSnapshot) -> RuntimeOperation:
    """The unsaved row a first snapshot makes."""
    fields = dict(snapshot.fields)
    if not fields["capability"]:
        fields["capability"] = states.METHOD_CAPABILITIES.get(fields["method"], "")
    return RuntimeOperation(
        operation_id=snapshot.operation_id,
        raw_payload=snapshot.payload,
        payload_digest=snapshot.payload_digest,
        **fields,
        **snapshot.projection.as_fields(),
    )


def apply_operation(op: RuntimeOperation, snapshot: OperationSnapshot) -> dict[str, Any] | None:
    """Overwrite ``op`` in memory with a newer snapshot.

    Returns the audit entry's arguments when the state changed, else None.
    """
    before = state_summary(op)
    for name, value in snapshot.fields.items():
        setattr(op, name, value)
    for name, value in snapshot.projection.as_fields().items():
        setattr(op, name, value)
    op.raw_payload = snapshot.payload
    op.payload_digest = snapshot.payload_digest
    after = state_summary(op)
    if before == after:
        return None
    return {
        "action": "operation.state_changed",
        "object_kind": "operation",
        "object_id": op.operation_id,
        "before": before,
        "after": after,
        "detail": {"rule": snapshot.projection.rule, "sequence": str(op.sequence)},
    }


def decide_event(
    snapshot: EventSnapshot, existing: RuntimeOperationEvent | None
) -> tuple[Outcome, str]:
    """Pure: events are immutable once stored."""
    if existing is None:
        return Outcome.CREATED, ""
    if existing.raw_payload == snapshot.payload:
        return Outcome.UNCHANGED, ""
    return Outcome.STALE, gettext("events are immutable once stored")


def new_event(snapshot: EventSnapshot, op: RuntimeOperation | int | None) -> RuntimeOperationEvent:
    """The unsaved event row; ``op`` is the operation or its primary key, if mirrored."""
    link = {"operation_id": op} if isinstance(op, int) else {"operation": op}
    return RuntimeOperationEvent(
        operation_id_raw=snapshot.operation_id,
        event_id=snapshot.event_id,
        method=snapshot.method,
        raw_payload=snapshot.payload,
        **link,
        **snapshot.fields,
    )
