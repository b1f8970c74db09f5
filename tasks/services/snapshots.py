"""Task and message snapshots, and the edge validation that makes them.

Each ``parse_*`` takes one wire payload (a BeeOS TaskResponse, a product
producer's task, an a2aTaskView, a MessageEnvelope), validates it field by
field (``beeos_console.mirror.edge.Reader``: every problem is a field error,
nothing is guessed) and returns a snapshot ready for either write path, with
its product projection (from ``tasks.states``) and payload digest computed once.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

from django.utils.translation import gettext

from beeos_console.mirror.edge import Reader, digest, stored_json
from beeos_console.mirror.i18n import translated
from beeos_console.mirror.states import Projection
from tasks import states


@dataclass(slots=True)
class TaskSnapshot:
    """One validated task snapshot, ready to write."""

    protocol: str
    task_id: str
    raw_state: str
    fields: dict[str, Any]
    updated_at: dt.datetime | None
    payload: dict[str, Any]
    history: list[dict[str, Any]] | None = None
    artifacts: list[dict[str, Any]] | None = None
    # Derived once, for whichever write path takes the snapshot.
    projection: Projection = field(init=False)
    payload_digest: str = field(init=False)

    def __post_init__(self) -> None:
        # A product producer's failure details ride in the payload (seed example).
        self.projection = states.project_stored(self.protocol, self.raw_state, self.payload)
        self.payload_digest = digest(self.payload)


# --- task payloads -------------------------------------------------------------


def parse_openapi_task(
    data: Any, *, protocol: str = states.OPENAPI, agent_optional: bool = False
) -> TaskSnapshot:
    """The ``data`` of a BeeOS TaskResponse (or a product producer's task).

    ``agent_optional``: a webhook TaskEvent names no agent; the sync fills it in.
    """
    r = Reader(data)
    task_id = r.id("task_id")
    agent_id = r.str("agent_id", required=protocol == states.OPENAPI and not agent_optional)
    raw_state = r.str("status", required=True, max_length=64)
    metadata = r.object("metadata")
    error, error_code = _openapi_error(r)
    fields = {
        "agent_id": agent_id,
        "caller_id": r.str("caller_id"),
        "context_id": r.str("context_id"),
        # OpenAPI task_id == the underlying channel id its messages live in.
        "channel_id": r.str("channel_id") or task_id,
        "error": error,
        "error_code": error_code,
        "result": r.any("result"),
        "metadata": metadata,
        "created_at": r.datetime("created_at"),
        "started_at": r.datetime("started_at"),
        "completed_at": r.datetime("completed_at"),
        "deadline_at": r.datetime("deadline_at"),
    }
    explicit_updated = r.datetime("updated_at")
    if protocol == states.PRODUCT:
        _check_producer_details(r)
    r.raise_if_invalid()
    updated_at = (
        explicit_updated or fields["completed_at"] or fields["started_at"] or fields["created_at"]
    )
    fields["updated_at"] = updated_at
    return TaskSnapshot(protocol, task_id, raw_state, fields, updated_at, stored_json(data))


def _check_producer_details(r: Reader) -> None:
    """A product producer's failure details: an invalid one is a field error, not dropped."""
    for name in states.PRODUCER_DETAILS:
        problem = states.producer_detail_error(name, r.data.get(name))
        if problem:
            r.fail(name, translated(problem))


ERROR_CODE_MAX = 128
_ERROR_INFO_TYPE = "google.rpc.ErrorInfo"


def _code_value(r: Reader, key: str) -> str:
    """An error code: a string, or an integer (JSON-RPC codes) kept as its text."""
    value = r.data.get(key)
    if isinstance(value, int) and not isinstance(value, bool):
        text = str(value)
        if len(text) > ERROR_CODE_MAX:
            r.fail(
                key,
                gettext("has %(digits)s digits; at most %(max)s are allowed")
                % {"digits": len(text), "max": ERROR_CODE_MAX},
            )
            return ""
        return text
    return r.str(key, max_length=ERROR_CODE_MAX)


def _openapi_error(r: Reader) -> tuple[str, str]:
    """(error text, error code) of a TaskResponse-shaped task.

    The contract sends ``error`` as a string; producers also send the error
    envelope's object (``{"code", "message", …}``, errors-reference.mdx) or a
    flat ``error_code``. Any other shape is a field error, never a guess.
    """
    error = r.data.get("error")
    code = _code_value(r, "error_code")
    if isinstance(error, dict):
        e = Reader(error, prefix=f"{r.prefix}error.", errors=r.errors)
        return e.text("message"), code or _code_value(e, "code")
    if error is not None and not isinstance(error, str):
        r.fail("error", gettext("must be a string, or an object with a code and a message"))
        return "", code
    return r.text("error"), code


def _error_info_reason(value: Any, r: Reader, key: str) -> str:
    """The ``reason`` of a google.rpc ErrorInfo (or of the first in a list), else ""."""
    items = value if isinstance(value, list) else [value]
    for i, item in enumerate(items):
        if isinstance(item, dict) and str(item.get("@type", "")).endswith(_ERROR_INFO_TYPE):
            where = f"{key}[{i}]" if isinstance(value, list) else key
            info = Reader(item, prefix=f"{r.prefix}{where}.", errors=r.errors)
            return info.str("reason", required=True, max_length=ERROR_CODE_MAX)
    return ""


def _a2a_error_code(status_message: Any, errors: dict[str, list[str]]) -> str:
    """The error code an A2A ``status.message`` carries, if any.

    Seed 003 names A2A errors by a google.rpc ErrorInfo whose ``reason`` is
    the error's name (e.g. ``TASK_NOT_FOUND``). A status message may carry
    one in its ``metadata`` (an explicit ``error_code``, or an ErrorInfo
    value) or in a data part (an ErrorInfo, a list of them, or a JSON-RPC
    error whose ``data`` holds them; else that error's ``code``). The first
    found wins; a malformed code is a field error. Shapes that carry no code
    are left alone: the message itself stays as free as the A2A spec has it.
    """
    if not isinstance(status_message, dict):
        return ""
    prefix = "status.message."
    metadata = status_message.get("metadata")
    if isinstance(metadata, dict):
        m = Reader(metadata, prefix=f"{prefix}metadata.", errors=errors)
        for key in ("error_code", "errorCode"):
            if metadata.get(key) is not None:
                return _code_value(m, key)
        for key, value in metadata.items():
            if reason := _error_info_reason(value, m, key):
                return reason
    parts = status_message.get("parts")
    for i, part in enumerate(parts if isinstance(parts, list) else []):
        data = part.get("data") if isinstance(part, dict) else None
        p = Reader({"data": data}, prefix=f"{prefix}parts[{i}].", errors=errors)
        if reason := _error_info_reason(data, p, "data"):
            return reason
        if isinstance(data, dict) and isinstance(data.get("error"), dict):
            e = Reader(data["error"], prefix=f"{prefix}parts[{i}].data.error.", errors=errors)
            return _error_info_reason(e.data.get("data"), e, "data") or _code_value(e, "code")
    return ""


def parse_product_task(data: Any) -> TaskSnapshot:
    """A product / legacy producer's task: TaskResponse-shaped, product vocabulary."""
    return parse_openapi_task(data, protocol=states.PRODUCT)


def a2a_text(message: Any) -> str:
    """The text parts of an A2A message, one per line."""
    if not isinstance(message, dict):
        return ""
    texts = [p.get("text", "") for p in message.get("parts") or [] if isinstance(p, dict)]
    # Data and file parts carry no text: skip them rather than join empty lines.
    return "\n".join(t for t in texts if isinstance(t, str) and t)


def parse_a2a_task(data: Any) -> TaskSnapshot:
    """An a2aTaskView (history and artifacts included when present)."""
    r = Reader(data)
    task_id = r.id("id")
    context_id = r.str("contextId", required=True)
    status = r.child("status", required=True)
    raw_state = status.str("state", required=True, max_length=64) if status else ""
    timestamp = status.datetime("timestamp") if status else None
    status_message = status.any("message") if status else None
    error_code = _a2a_error_code(status_message, r.errors)
    history = r.list("history")
    artifacts = r.list("artifacts")
    for i, item in enumerate(history):
        h = Reader(item, prefix=f"history[{i}].", errors=r.errors)
        h.str("messageId", required=True)
        h.str("role", required=True, max_length=32)
        h.str("contextId")  # stored as the message's conversation id
        h.list("parts")
        h.object("metadata")
    for i, item in enumerate(artifacts):
        a = Reader(item, prefix=f"artifacts[{i}].", errors=r.errors)
        a.str("artifactId", required=True)
        a.str("name")
        a.text("description")
        a.list("parts")
        a.object("metadata")
        a.list("extensions")
    fields = {
        "agent_id": r.str("target_agent_id") or r.str("agent_id"),
        "caller_principal_id": r.str("caller_principal_id"),
        "caller_agent_id": r.str("caller_agent_id"),
        "caller_owner_id": r.str("caller_owner_id"),
        "target_principal_id": r.str("target_principal_id"),
        "target_agent_id": r.str("target_agent_id"),
        "target_owner_id": r.str("target_owner_id"),
        "context_id": context_id,
        "metadata": r.object("metadata"),
        "error_code": error_code,
        "updated_at": timestamp,
    }
    r.raise_if_invalid()
    projection = states.project(states.A2A, raw_state)
    if projection.status == "failed" or projection.reason == "rejected":
        fields["error"] = a2a_text(status_message)
    if projection.is_terminal:
        fields["completed_at"] = timestamp
    return TaskSnapshot(
        states.A2A,
        task_id,
        raw_state,
        fields,
        timestamp,
        stored_json(data),
        history=history or None,
        artifacts=artifacts or None,
    )


# --- message envelopes ---------------------------------------------------------


@dataclass(slots=True)
class MessageSnapshot:
    """One validated message envelope, ready to write."""

    message_id: str
    conversation_id: str
    state: str
    updated_at: dt.datetime
    values: dict[str, Any]  # every column but ``task``
    payload_digest: str


def parse_message(data: Any) -> MessageSnapshot:
    """A MessageEnvelope, validated at the edge."""
    r = Reader(data)
    message_id = r.id("id")
    conversation_id = r.str("conversation_id", required=True)
    fields = {
        "conversation_id": conversation_id,
        "type": r.str("type", required=True, max_length=64),
        # Pre-v3 rows may name no publisher: stored empty, shown as "—".
        "sender": r.str("sender"),
        "role": r.str("role", max_length=32),
        "reply_to": r.str("reply_to"),
        "body": r.text("body"),
        "parts": r.list("parts"),
        "content": r.any("content"),
        "created_at": r.datetime("created_at", required=True),
        "updated_at": r.datetime("updated_at"),
    }
    state = r.str("state", required=True, max_length=32)
    stop_reason = r.str("stop_reason", max_length=32)
    r.raise_if_invalid()
    payload = stored_json(data)
    payload_digest = digest(payload)
    projection = states.project_message(state, stop_reason=stop_reason)
    values = {
        **fields,
        "state": state,
        "stop_reason": stop_reason,
        "raw_payload": payload,
        "payload_digest": payload_digest,
        **projection.as_fields(),
    }
    return MessageSnapshot(
        message_id,
        conversation_id,
        state,
        fields["updated_at"] or fields["created_at"],
        values,
        payload_digest,
    )
