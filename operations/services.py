"""Every write to runtime operations and their events.

A RuntimeOperationSnapshot (camelCase, as on the wire) is validated at the
edge and written whole or not at all. Ordering: the operation ``sequence``
(then ``updatedAt``) decides which snapshot is newer; a terminal status never
goes back; the same snapshot twice changes nothing. Status changes are
audited with the writer as actor.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from django.db import transaction

from beeos_console.auditlog import services as audit
from beeos_console.auditlog.services import Actor
from beeos_console.cancels.engine import CancelOutcome, CancelTarget, Refusal, request_cancel
from beeos_console.cancels.gateways import Gateway, GatewayAnswer
from beeos_console.mirror import counters
from beeos_console.mirror.edge import IngestResult, Outcome, Reader, digest, json_safe
from beeos_console.mirror.states import Projection

from . import states
from .models import RuntimeOperation, RuntimeOperationEvent


def parse_runtime_operation(data: Any) -> dict[str, Any]:
    """Validated model fields of one RuntimeOperationSnapshot."""
    r = Reader(data)
    target = r.child("target", required=True)
    progress = r.child("progress")
    cancel = r.child("cancelRequest")
    projection = r.child("projection")
    error = r.child("error")
    fields: dict[str, Any] = {
        "operation_id": r.id("id"),
        "instance_id": r.str("instanceId", required=True),
        "target_scope": target.str("scope", required=True, max_length=16) if target else "",
        "platform_agent_id": target.str("platformAgentId") if target else "",
        "conversation_id": target.str("conversationId") if target else "",
        "method": r.str("method", required=True, max_length=64),
        "capability": r.str("capability", max_length=64),
        "transport": r.str("transport", max_length=32),
        "sequence": r.decimal_string("sequence", required=True),
        "cursor": r.str("cursor", max_length=32),
        "created_at": r.datetime("createdAt", required=True),
        "updated_at": r.datetime("updatedAt", required=True),
        "raw_status": r.str("status", required=True, max_length=32),
        "effect_state": r.str("effectState", required=True, max_length=32),
        "terminal": r.bool("terminal", required=True),
        "progress": r.object("progress") or None,
        "result": r.any("result"),
        "cancel_requested_by": cancel.str("requestedBy", required=True) if cancel else "",
        "cancel_reason": cancel.text("reason") if cancel else "",
        "cancel_requested_at": cancel.datetime("requestedAt", required=True) if cancel else None,
        "projection_revision": projection.decimal_string("revision", required=True)
        if projection
        else None,
        "projection_state": projection.str("state", required=True, max_length=32)
        if projection
        else "",
        "projection_platform_agent_id": projection.str("platformAgentId") if projection else "",
        "error_code": error.str("code", required=True, max_length=64) if error else "",
        "error_message": error.text("message") if error else "",
        "error_request_id": error.str("requestId") if error else "",
        "error_effect_state": error.str("effectState", max_length=32) if error else "",
        "error_retry_mode": error.str("retryMode", max_length=16) if error else "",
        "error_context": (error.object("context") or None) if error else None,
    }
    if progress:
        progress.decimal_string("sequence", required=True)
        progress.str("phase", required=True, max_length=128)
    r.raise_if_invalid()
    return fields


def project_operation(fields: dict[str, Any]) -> Projection:
    return states.project(
        fields["raw_status"],
        error_code=fields.get("error_code"),
        retry_mode=fields.get("error_retry_mode"),
        effect_state=fields.get("effect_state"),
        projection_state=fields.get("projection_state"),
        error_effect_state=fields.get("error_effect_state"),
    )


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


def _summary(op: RuntimeOperation) -> dict[str, Any]:
    return {
        "raw_status": op.raw_status,
        "effect_state": op.effect_state,
        "projection_state": op.projection_state,
        "status": op.status,
        "reason": op.reason,
        "outcome_certainty": op.outcome_certainty,
        "retry_policy": op.retry_policy,
    }


@dataclass(slots=True)
class OperationSnapshot:
    """One validated RuntimeOperationSnapshot, ready to write."""

    operation_id: str
    fields: dict[str, Any]  # model fields, projection excluded
    projection: Projection
    payload: dict[str, Any]
    payload_digest: str


def parse_operation_snapshot(data: Any) -> OperationSnapshot:
    fields = parse_runtime_operation(data)
    payload = json_safe(data)
    operation_id = fields.pop("operation_id")
    return OperationSnapshot(
        operation_id, fields, project_operation(fields), payload, digest(payload)
    )


def decide_operation(
    snapshot: OperationSnapshot, op: RuntimeOperation | None
) -> tuple[Outcome, str]:
    """Pure: what the storage rules make of a snapshot against the stored row."""
    if op is None:
        return Outcome.CREATED, ""
    if op.payload_digest == snapshot.payload_digest:
        return Outcome.UNCHANGED, ""
    fields = snapshot.fields
    if (fields["sequence"], fields["updated_at"]) < (op.sequence, op.updated_at):
        return Outcome.STALE, "older than the stored snapshot"
    if states.is_terminal(op.raw_status) and not states.is_terminal(fields["raw_status"]):
        return Outcome.STALE, "a terminal status never goes back"
    return Outcome.UPDATED, ""


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
    before = _summary(op)
    for name, value in snapshot.fields.items():
        setattr(op, name, value)
    for name, value in snapshot.projection.as_fields().items():
        setattr(op, name, value)
    op.raw_payload = snapshot.payload
    op.payload_digest = snapshot.payload_digest
    after = _summary(op)
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


def ingest_runtime_operation(data: Any, *, actor: Actor) -> IngestResult:
    """The one-record write path for a runtime operation row."""
    snapshot = parse_operation_snapshot(data)
    operation_id = snapshot.operation_id
    with transaction.atomic():
        op = RuntimeOperation.objects.select_for_update().filter(operation_id=operation_id).first()
        outcome, note = decide_operation(snapshot, op)
        if outcome == Outcome.CREATED:
            op = new_operation(snapshot)
            op.save(force_insert=True)
            counters.on_create(counters.OPERATION, op.status, op.created_at)
            counters.on_create(counters.OPERATION_RAW, op.raw_status[:32], op.created_at)
            RuntimeOperationEvent.objects.filter(
                operation__isnull=True, operation_id_raw=operation_id
            ).update(operation=op)
            return IngestResult(Outcome.CREATED, operation_id, op)
        if outcome != Outcome.UPDATED:
            return IngestResult(outcome, operation_id, op, note)
        counted_before = (op.status, op.created_at)
        raw_before = (op.raw_status[:32], op.created_at)
        change = apply_operation(op, snapshot)
        op.save()
        counters.on_change(counters.OPERATION, counted_before, (op.status, op.created_at))
        counters.on_change(counters.OPERATION_RAW, raw_before, (op.raw_status[:32], op.created_at))
        if change is not None:
            audit.record(actor, **change)
        return IngestResult(Outcome.UPDATED, operation_id, op)


@dataclass(slots=True)
class EventSnapshot:
    """One validated RuntimeOperationEventEnvelope."""

    operation_id: str
    event_id: Decimal
    method: str
    fields: dict[str, Any]
    payload: dict[str, Any]

    @property
    def label(self) -> str:
        return f"{self.operation_id}#{self.event_id}"


def parse_event(data: Any) -> EventSnapshot:
    r = Reader(data)
    event_id = r.decimal_string("id", required=True)
    operation_id = r.id("operationId")
    method = r.str("method", required=True, max_length=64)
    event = r.child("event", required=True)
    fields: dict[str, Any] = {}
    if event:
        fields = {
            "type": event.str("type", required=True, max_length=64),
            "sequence": event.decimal_string("sequence", required=True),
            "recorded_at": event.datetime("recordedAt", required=True),
            "outcome": event.str("outcome", max_length=32),
            "revision": event.decimal_string("revision"),
            "payload": event.any("payload"),
            "result": event.any("result"),
            "error": event.object("error") or None,
        }
    r.raise_if_invalid()
    return EventSnapshot(operation_id, event_id, method, fields, json_safe(data))


def decide_event(
    snapshot: EventSnapshot, existing: RuntimeOperationEvent | None
) -> tuple[Outcome, str]:
    """Pure: events are immutable once stored."""
    if existing is None:
        return Outcome.CREATED, ""
    if existing.raw_payload == snapshot.payload:
        return Outcome.UNCHANGED, ""
    return Outcome.STALE, "events are immutable once stored"


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


def ingest_runtime_operation_event(data: Any, *, actor: Actor) -> IngestResult:
    """The one-record write path for a RuntimeOperationEventEnvelope."""
    snapshot = parse_event(data)
    with transaction.atomic():
        existing = RuntimeOperationEvent.objects.filter(
            operation_id_raw=snapshot.operation_id, event_id=snapshot.event_id
        ).first()
        outcome, note = decide_event(snapshot, existing)
        if outcome != Outcome.CREATED:
            return IngestResult(outcome, snapshot.label, existing, note)
        op = RuntimeOperation.objects.filter(operation_id=snapshot.operation_id).first()
        created = new_event(snapshot, op)
        created.save(force_insert=True)
        return IngestResult(Outcome.CREATED, snapshot.label, created)


# --- cancel -------------------------------------------------------------------


def apply_local_cancel(
    op: RuntimeOperation, *, requested_by: str, reason: str, at: dt.datetime
) -> bool:
    """The local gateway's cancel: a cancel request, then cancelled / effectState cancelled.

    Returns False when the operation moved past running meanwhile.
    """
    with transaction.atomic():
        op = RuntimeOperation.objects.select_for_update().get(pk=op.pk)
        if not states.is_cancellable(op.raw_status):
            return False
        _write_local_cancel(op, requested_by=requested_by, reason=reason, at=at)
    return True


def _write_local_cancel(
    op: RuntimeOperation, *, requested_by: str, reason: str, at: dt.datetime
) -> None:
    payload = dict(op.raw_payload or {})
    payload.update(
        {
            "sequence": str(int(op.sequence) + 1),
            "updatedAt": at.isoformat(),
            "status": states.cancel_spelling(),
            "effectState": "cancelled",
            "terminal": True,
            "cancelRequest": {
                "requestedBy": requested_by,
                "reason": reason,
                "requestedAt": at.isoformat(),
            },
        }
    )
    payload.pop("progress", None)
    ingest_runtime_operation(payload, actor=Actor.system("local-gateway"))


def cancel_refusal(op: RuntimeOperation) -> Refusal | None:
    """Why this operation may not be cancelled now; None when it may (its status decides)."""
    reason = states.cancel_refusal_reason(op.raw_status)
    if reason is None:
        return None
    code, words, summary = reason
    return Refusal(f"{words} No call was made.", code=code, summary=summary)


class OperationCancelTarget(CancelTarget):
    kind = "operation"

    def load(self, *, lock: bool = True) -> RuntimeOperation | None:
        qs = RuntimeOperation.objects.select_for_update() if lock else RuntimeOperation.objects
        return qs.filter(operation_id=self.object_id).first()

    @staticmethod
    def object_id_of(obj: RuntimeOperation) -> str:
        return obj.operation_id

    def refusal(self, obj: RuntimeOperation) -> Refusal | None:
        return cancel_refusal(obj)

    def already_requested(self, obj: RuntimeOperation) -> Refusal | None:
        if obj.has_cancel_request:
            when = obj.cancel_requested_at.isoformat() if obj.cancel_requested_at else "earlier"
            return Refusal(
                f"Already cancel-requested by {obj.cancel_requested_by or 'someone'} ({when}). "
                "No second request was sent.",
                code="already_requested",
                summary="already cancel-requested",
            )
        return None

    def apply_local_cancel(
        self, obj: RuntimeOperation, *, requested_by: str, reason: str, at: dt.datetime
    ) -> bool:
        return apply_local_cancel(obj, requested_by=requested_by, reason=reason, at=at)

    def summary(self, obj: RuntimeOperation) -> dict[str, Any]:
        return _summary(obj) if obj else {}

    def call(
        self, gw: Gateway, obj: RuntimeOperation, key: str, reason: str, actor: Actor
    ) -> GatewayAnswer:
        return gw.cancel_operation(obj, idempotency_key=key, reason=reason, requested_by=actor.name)

    def reread(self, gw: Gateway, obj: RuntimeOperation) -> None:
        gw.reread_operation(obj)

    def is_cancelled(self, obj: RuntimeOperation) -> bool:
        return states.is_cancelled(obj.raw_status)


def cancel_operation(
    operation_id: str,
    *,
    actor: Actor,
    reason: Any,
    idempotency_key: Any = None,
    gw: Gateway | None = None,
    bulk: Any = None,
) -> CancelOutcome:
    """Cancel one runtime operation safely: only while queued or running."""
    return request_cancel(
        OperationCancelTarget("", operation_id),
        actor=actor,
        reason=reason,
        idempotency_key=idempotency_key,
        gw=gw,
        bulk=bulk,
    )
