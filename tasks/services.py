"""Every write to tasks, messages and artifacts.

Each ``ingest_*`` takes one wire snapshot, validates it at the edge, and
writes it whole or not at all (one transaction), stamping the product
projection from ``tasks.states``. Ordering rules (DESIGN.md, Storage rules):
the same snapshot twice changes nothing, an older snapshot never overwrites a
newer one, and a terminal state never goes back to a non-terminal one. Every
change of product status is audited with the writer as actor.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction

from beeos_console.auditlog import services as audit
from beeos_console.auditlog.services import Actor
from beeos_console.cancels.engine import CancelOutcome, CancelTarget, Refusal, request_cancel
from beeos_console.cancels.gateways import Gateway, GatewayAnswer
from beeos_console.mirror import counters
from beeos_console.mirror.edge import IngestResult, Outcome, Reader, digest, is_older, json_safe
from beeos_console.mirror.states import PROCESSING, QUEUED, Projection

from . import states
from .models import Artifact, Message, Task

_RANK = {QUEUED: 0, PROCESSING: 1}


def _rank(projection: Projection) -> int:
    """Lifecycle progress, for snapshots that carry no usable timestamp."""
    if projection.is_terminal:
        return 2
    return _RANK.get(projection.status, -1)


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


# --- parsing (edge validation) --------------------------------------------


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
    return TaskSnapshot(protocol, task_id, raw_state, fields, updated_at, json_safe(data))


def _check_producer_details(r: Reader) -> None:
    """A product producer's failure details: an invalid one is a field error, not dropped."""
    for name in states.PRODUCER_DETAILS:
        problem = states.producer_detail_error(name, r.data.get(name))
        if problem:
            r.fail(name, problem)


ERROR_CODE_MAX = 128
_ERROR_INFO_TYPE = "google.rpc.ErrorInfo"


def _code_value(r: Reader, key: str) -> str:
    """An error code: a string, or an integer (JSON-RPC codes) kept as its text."""
    value = r.data.get(key)
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
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
        r.fail("error", "must be a string, or an object with a code and a message")
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


def _a2a_text(message: Any) -> str:
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
        h.list("parts")
    for i, item in enumerate(artifacts):
        a = Reader(item, prefix=f"artifacts[{i}].", errors=r.errors)
        a.str("artifactId", required=True)
        a.str("name")
        a.list("parts")
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
        fields["error"] = _a2a_text(status_message)
    if projection.is_terminal:
        fields["completed_at"] = timestamp
    return TaskSnapshot(
        states.A2A,
        task_id,
        raw_state,
        fields,
        timestamp,
        json_safe(data),
        history=history or None,
        artifacts=artifacts or None,
    )


# --- writing ----------------------------------------------------------------


def _state_summary(task: Task) -> dict[str, Any]:
    return {
        "raw_state": task.raw_state,
        "status": task.status,
        "reason": task.reason,
        "outcome_certainty": task.outcome_certainty,
        "retry_policy": task.retry_policy,
    }


def decide_task(
    snapshot: TaskSnapshot, task: Task | None, *, authoritative: bool = False
) -> tuple[Outcome, str]:
    """What the storage rules make of ``snapshot`` against the stored ``task``.

    Pure (no database): the one-record and the batch write paths both ask it.
    """
    if task is None:
        return Outcome.CREATED, ""
    if task.payload_digest == snapshot.payload_digest:
        return Outcome.UNCHANGED, ""
    projection = snapshot.projection
    stored = states.project(task.protocol, task.raw_state)
    if not authoritative and is_older(snapshot.updated_at, task.updated_at):
        return Outcome.STALE, "older than the stored snapshot"
    if stored.is_terminal and not projection.is_terminal:
        return Outcome.STALE, "a terminal state never goes back"
    same_time = snapshot.updated_at is None or snapshot.updated_at == task.updated_at
    if not authoritative and same_time and _rank(projection) < _rank(stored):
        return Outcome.STALE, "behind the stored lifecycle"
    return Outcome.UPDATED, ""


def new_task(snapshot: TaskSnapshot) -> Task:
    """The unsaved row a first snapshot makes."""
    fields = dict(snapshot.fields)
    if fields.get("created_at") is None:
        fields["created_at"] = snapshot.updated_at or dt.datetime.now(dt.UTC)
    if fields.get("updated_at") is None:
        # Keyset pages sort on updated_at: never leave it empty.
        fields["updated_at"] = fields["created_at"]
    return Task(
        protocol=snapshot.protocol,
        task_id=snapshot.task_id,
        raw_state=snapshot.raw_state,
        raw_payload=snapshot.payload,
        payload_digest=snapshot.payload_digest,
        **fields,
        **snapshot.projection.as_fields(),
    )


def apply_task(task: Task, snapshot: TaskSnapshot) -> dict[str, Any] | None:
    """Overwrite ``task`` in memory with a newer snapshot.

    Returns the audit entry's arguments when the state changed, else None.
    """
    before = _state_summary(task)
    for name, value in snapshot.fields.items():
        if name == "created_at" and value is None:
            continue
        setattr(task, name, value)
    task.raw_state = snapshot.raw_state
    for name, value in snapshot.projection.as_fields().items():
        setattr(task, name, value)
    task.raw_payload = snapshot.payload
    task.payload_digest = snapshot.payload_digest
    if task.updated_at is None:
        task.updated_at = task.created_at
    after = _state_summary(task)
    if before["status"] == after["status"] and before["raw_state"] == after["raw_state"]:
        return None
    return {
        "action": "task.state_changed",
        "object_kind": "task",
        "object_id": task.task_id,
        "before": before,
        "after": after,
        "detail": {"protocol": task.protocol, "rule": snapshot.projection.rule},
    }


def write_task(
    snapshot: TaskSnapshot, *, actor: Actor, authoritative: bool = False
) -> IngestResult:
    """The one-record write path for a task row (the batch path: ``tasks.batch``).

    ``authoritative``: the snapshot was just read from the BeeOS API ("the API
    is truth"), so it wins over timestamps from webhooks; a terminal state
    still never goes back.
    """
    with transaction.atomic():
        task = (
            Task.objects.select_for_update()
            .filter(protocol=snapshot.protocol, task_id=snapshot.task_id)
            .first()
        )
        outcome, note = decide_task(snapshot, task, authoritative=authoritative)
        if outcome == Outcome.CREATED:
            return _create_task(snapshot)
        if outcome != Outcome.UPDATED:
            return IngestResult(outcome, task.task_id, task, note)
        counted_before = (task.status, task.created_at)
        change = apply_task(task, snapshot)
        task.save()
        counters.on_change(counters.TASK, counted_before, (task.status, task.created_at))
        _write_a2a_children(task, snapshot)
        if change is not None:
            audit.record(actor, **change)
        return IngestResult(Outcome.UPDATED, task.task_id, task)


def _create_task(snapshot: TaskSnapshot) -> IngestResult:
    task = new_task(snapshot)
    task.save(force_insert=True)
    counters.on_create(counters.TASK, task.status, task.created_at)
    if task.channel_id:
        # Messages that arrived before their task: file them under it now.
        Message.objects.filter(task__isnull=True, conversation_id=task.channel_id).update(task=task)
    _write_a2a_children(task, snapshot)
    return IngestResult(Outcome.CREATED, task.task_id, task)


_A2A_HISTORY_PROJECTION = states.project_message("completed").as_fields()


def a2a_history_values(task: Task, snapshot: TaskSnapshot) -> list[tuple[str, dict[str, Any]]]:
    """(message_id, field values) of each A2A history message the snapshot carries."""
    rows = []
    for position, item in enumerate(snapshot.history or []):
        payload = json_safe(item)
        rows.append(
            (
                item["messageId"],
                {
                    "task": task,
                    "conversation_id": item.get("contextId") or task.context_id,
                    "type": "a2a_message",
                    "sender": task.caller_agent_id if item.get("role") == "user" else task.agent_id,
                    "role": item.get("role", ""),
                    "body": _a2a_text(item),
                    "parts": item.get("parts") or [],
                    "metadata": item.get("metadata") or {},
                    "created_at": task.created_at,
                    "position": position,
                    "raw_payload": payload,
                    "payload_digest": digest(payload),
                    # History messages carry no envelope state: shown as delivered.
                    **_A2A_HISTORY_PROJECTION,
                },
            )
        )
    return rows


def artifact_values(snapshot: TaskSnapshot) -> list[tuple[str, dict[str, Any]]]:
    """(artifact_id, field values) of each artifact the snapshot carries."""
    return [
        (
            item["artifactId"],
            {
                "name": item.get("name") or "",
                "description": item.get("description") or "",
                "parts": item.get("parts") or [],
                "metadata": item.get("metadata") or {},
                "extensions": item.get("extensions") or [],
            },
        )
        for item in snapshot.artifacts or []
    ]


def _write_a2a_children(task: Task, snapshot: TaskSnapshot) -> None:
    """A2A history messages and artifacts, as the snapshot carries them."""
    for message_id, values in a2a_history_values(task, snapshot):
        Message.objects.update_or_create(
            source=Message.Source.A2A, message_id=message_id, defaults=values
        )
    for artifact_id, values in artifact_values(snapshot):
        Artifact.objects.update_or_create(task=task, artifact_id=artifact_id, defaults=values)


def ingest_openapi_task(data: Any, *, actor: Actor) -> IngestResult:
    return write_task(parse_openapi_task(data), actor=actor)


def ingest_product_task(data: Any, *, actor: Actor) -> IngestResult:
    return write_task(parse_product_task(data), actor=actor)


def ingest_a2a_task(data: Any, *, actor: Actor) -> IngestResult:
    return write_task(parse_a2a_task(data), actor=actor)


# --- messages -----------------------------------------------------------------


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
    payload = json_safe(data)
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


def decide_message(snapshot: MessageSnapshot, message: Message | None) -> tuple[Outcome, str]:
    """Pure: what the storage rules make of an envelope against the stored one.

    Once terminal, an envelope is immutable (seed).
    """
    if message is None:
        return Outcome.CREATED, ""
    if message.payload_digest == snapshot.payload_digest:
        return Outcome.UNCHANGED, ""
    stored_updated = message.updated_at or message.created_at
    if is_older(snapshot.updated_at, stored_updated):
        return Outcome.STALE, "older than stored"
    if states.is_message_terminal(message.state):
        return Outcome.STALE, "a terminal envelope is immutable"
    return Outcome.UPDATED, ""


def ingest_message(data: Any, *, actor: Actor) -> IngestResult:
    """The one-record write path for a message envelope."""
    snapshot = parse_message(data)
    message_id = snapshot.message_id
    with transaction.atomic():
        message = (
            Message.objects.select_for_update()
            .filter(source=Message.Source.ENVELOPE, message_id=message_id)
            .first()
        )
        outcome, note = decide_message(snapshot, message)
        if outcome not in (Outcome.CREATED, Outcome.UPDATED):
            return IngestResult(outcome, message_id, message, note)
        conversation_id = snapshot.conversation_id
        task = (
            Task.objects.filter(channel_id=conversation_id).order_by("protocol", "id").first()
            if conversation_id
            else None
        )
        if message is None:
            message = Message.objects.create(
                source=Message.Source.ENVELOPE,
                message_id=message_id,
                task=task,
                **snapshot.values,
            )
            return IngestResult(Outcome.CREATED, message_id, message)
        for name, value in snapshot.values.items():
            setattr(message, name, value)
        message.task = task
        message.save()
        return IngestResult(Outcome.UPDATED, message_id, message)


# --- cancel -------------------------------------------------------------------


def apply_local_cancel(task: Task) -> bool:
    """The local gateway's cancel: the protocol's own canceled spelling, stamped.

    Goes through ``write_task`` like any snapshot, so the projection, the
    counters and the ordering rules apply as for real upstream data. Returns
    False when the task ended meanwhile (the terminal state wins).
    """
    with transaction.atomic():
        task = Task.objects.select_for_update().get(pk=task.pk)
        if cancel_refusal(task) is not None:
            return False
        _write_local_cancel(task)
    return True


def _write_local_cancel(task: Task) -> None:
    now = dt.datetime.now(dt.UTC)
    spelling = states.cancel_spelling(task.protocol, like=task.raw_state)
    payload = dict(task.raw_payload or {})
    if task.protocol == states.A2A:
        status = dict(payload.get("status") or {})
        status.update({"state": spelling, "timestamp": now.isoformat()})
        payload["status"] = status
        snapshot = parse_a2a_task(payload)
    else:
        payload.update(
            {"status": spelling, "updated_at": now.isoformat(), "completed_at": now.isoformat()}
        )
        payload.setdefault("task_id", task.task_id)
        snapshot = parse_openapi_task(payload, protocol=task.protocol, agent_optional=True)
    write_task(snapshot, actor=Actor.system("local-gateway"), authoritative=True)


def cancel_refusal(task: Task) -> Refusal | None:
    """Why this task may not be cancelled now (DESIGN.md, Cancel rules); None when it may.

    The one rule for tasks: the engine, bulk preview, list rows and pages ask it.
    Cancellability follows the status alone, never a producer's failure details.
    """
    projection = states.project(task.protocol, task.raw_state)
    if states.is_cancellable(task.protocol, task.raw_state):
        return None
    if projection.is_unmapped:
        return Refusal(
            f"The task's state {task.raw_state!r} is unmapped: the console cannot tell "
            "whether a cancel is safe. No call was made.",
            code="unmapped",
            summary=f"unmapped state {task.raw_state!r}: cannot tell whether a cancel is safe",
        )
    return Refusal(
        f"The task has already ended: {states.explain(task.protocol, task.raw_state, projection)}."
        " No call was made.",
        code="ended",
        summary=f"already {projection.status}",
    )


class TaskCancelTarget(CancelTarget):
    kind = "task"

    def load(self, *, lock: bool = True) -> Task | None:
        qs = Task.objects.select_for_update() if lock else Task.objects
        return qs.filter(protocol=self.protocol, task_id=self.object_id).first()

    @staticmethod
    def object_id_of(obj: Task) -> str:
        return obj.task_id

    def refusal(self, obj: Task) -> Refusal | None:
        return cancel_refusal(obj)

    def apply_local_cancel(
        self, obj: Task, *, requested_by: str, reason: str, at: dt.datetime
    ) -> bool:
        return apply_local_cancel(obj)

    def summary(self, obj: Task) -> dict[str, Any]:
        return _state_summary(obj) if obj else {}

    def call(self, gw: Gateway, obj: Task, key: str, reason: str, actor: Actor) -> GatewayAnswer:
        return gw.cancel_task(obj, idempotency_key=key, reason=reason)

    def reread(self, gw: Gateway, obj: Task) -> None:
        gw.reread_task(obj)


def cancel_task(
    protocol: str,
    task_id: str,
    *,
    actor: Actor,
    reason: Any,
    idempotency_key: Any = None,
    gw: Gateway | None = None,
    bulk: Any = None,
) -> CancelOutcome:
    """Cancel one task safely (see ``beeos_console.cancels.engine``)."""
    return request_cancel(
        TaskCancelTarget(protocol, task_id),
        actor=actor,
        reason=reason,
        idempotency_key=idempotency_key,
        gw=gw,
        bulk=bulk,
    )
