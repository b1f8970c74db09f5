"""Runtime operation and event snapshots, and the edge validation that makes them.

A RuntimeOperationSnapshot or a RuntimeOperationEventEnvelope (camelCase, as
on the wire) is validated field by field (``beeos_console.mirror.edge.Reader``:
every problem is a field error, nothing is guessed) into a snapshot ready for
either write path, its product projection (``operations.states``) computed once.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from beeos_console.mirror.edge import Reader, digest, stored_json
from beeos_console.mirror.states import Projection
from operations import states

# --- runtime operations -----------------------------------------------------------


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
    """The product projection of an operation's validated (or stored) fields."""
    return states.project(
        fields["raw_status"],
        error_code=fields.get("error_code"),
        retry_mode=fields.get("error_retry_mode"),
        effect_state=fields.get("effect_state"),
        projection_state=fields.get("projection_state"),
        error_effect_state=fields.get("error_effect_state"),
    )


@dataclass(slots=True)
class OperationSnapshot:
    """One validated RuntimeOperationSnapshot, ready to write."""

    operation_id: str
    fields: dict[str, Any]  # model fields, projection excluded
    projection: Projection
    payload: dict[str, Any]
    payload_digest: str


def parse_operation_snapshot(data: Any) -> OperationSnapshot:
    """A RuntimeOperationSnapshot, validated at the edge."""
    fields = parse_runtime_operation(data)
    payload = stored_json(data)
    operation_id = fields.pop("operation_id")
    return OperationSnapshot(
        operation_id, fields, project_operation(fields), payload, digest(payload)
    )


# --- runtime operation events -----------------------------------------------------


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
    """A RuntimeOperationEventEnvelope, validated at the edge."""
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
    return EventSnapshot(operation_id, event_id, method, fields, stored_json(data))
