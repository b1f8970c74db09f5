"""The webhook inbox: store on receipt, apply later in batches (DESIGN.md, Data flow).

The receiver (``webhooks``) only verifies, validates the envelope and calls
``store``: one ``INSERT … ON CONFLICT (dedup_key) DO NOTHING``, nothing else, so
it acknowledges BeeOS within a millisecond or two whatever the mirror's load.

``apply_batch`` is the worker side (``manage.py apply_webhooks``, or the
django-tasks job in ``upstream.tasks``). In ONE transaction it

1. claims queued events in received order (``SELECT … FOR UPDATE SKIP LOCKED``:
   workers share the backlog and never wait for each other),
2. puts back the events of any object whose earlier event another worker holds
   (so each object's events still apply in received order),
3. applies the rest through the set-based write path (``tasks.services.batch``),
   under the same storage rules as every other writer, with the state-change
   audit entries written per batch in one statement,
4. marks each event ``applied`` (with what the write made of it) or ``failed``
   (with its error) and flags the tasks for a re-read by ``sync_beeos``.

A worker killed anywhere in there rolls the whole transaction back: its events
are queued again, unlocked, and the next claim takes them. Nothing is applied
twice, nothing is dropped. An event that can't be applied stays ``failed``
with its error until an admin retries it (``retry``, audited).
"""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
import json
import logging
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import psycopg
from django.db import InterfaceError, OperationalError, ProgrammingError, connection, transaction
from django.utils import timezone
from django.utils.translation import gettext

from beeos_console.auditlog import services as auditlog
from beeos_console.auditlog.services import Actor
from beeos_console.mirror.batch import Batch, in_keys
from beeos_console.mirror.edge import IngestError, IngestResult, Outcome, Reader
from beeos_console.upstream.models import WebhookInboxEvent
from tasks import states
from tasks.models import Task
from tasks.services.batch import lock_tasks, write_tasks
from tasks.services.rules import decide_task
from tasks.services.snapshots import TaskSnapshot, parse_a2a_task, parse_openapi_task

log = logging.getLogger(__name__)

ACTOR = Actor.feeder("beeos-webhook")
BATCH_SIZE = 1000
ERROR_MAX = 4000  # characters of an apply error kept on the event

Event = WebhookInboxEvent
QUEUED, APPLIED, FAILED = Event.Status.QUEUED, Event.Status.APPLIED, Event.Status.FAILED
_TABLE = Event._meta.db_table
TaskKey = tuple[str, str]


# --- receiving -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Envelope:
    """What the receiver read from a verified event: enough to store and dedupe it."""

    kind: str
    protocol: str
    task_id: str
    status: str
    timestamp: dt.datetime | None
    dedup_key: uuid.UUID


def dedup_key(kind: str, task_id: str, status: str, stamp: str) -> uuid.UUID:
    """The receiver checklist's key, ``(task_id, status, timestamp)``, per kind of event,
    as 16 bytes of its SHA-256 (a small unique index on the hot path)."""
    text = "\x1f".join((kind, task_id, status, stamp))
    return uuid.UUID(bytes=hashlib.sha256(text.encode()).digest()[:16])


def task_status_envelope(payload: dict[str, Any]) -> Envelope:
    """A ``task_status`` TaskEvent (openapi renderer); ``IngestError`` names bad fields."""
    r = Reader(payload)
    task_id = r.id("task_id")
    status = r.str("status", required=True, max_length=64)
    timestamp = r.datetime("timestamp", required=True)
    r.str("context_id")
    r.bool("final")
    r.raise_if_invalid()
    assert timestamp is not None  # required above
    kind = Event.Kind.TASK_STATUS
    key = dedup_key(kind, task_id, status, timestamp.isoformat())
    return Envelope(kind, states.OPENAPI, task_id, status, timestamp, key)


def a2a_push_envelope(payload: dict[str, Any], body: bytes) -> Envelope:
    """An A2A task push (a whole a2aTaskView), validated as the write path will read it."""
    snapshot = parse_a2a_task(payload)
    kind = Event.Kind.A2A_PUSH
    # No timestamp: the same state can carry new history, so the body itself is the key.
    stamp = (
        snapshot.updated_at.isoformat() if snapshot.updated_at else hashlib.sha256(body).hexdigest()
    )
    key = dedup_key(kind, snapshot.task_id, snapshot.raw_state, stamp)
    return Envelope(
        kind, states.A2A, snapshot.task_id, snapshot.raw_state, snapshot.updated_at, key
    )


_INSERT = f"""
INSERT INTO {_TABLE}
  (dedup_key, kind, scheme, protocol, task_id, event_status, event_timestamp, payload)
VALUES (%s, %s, %s, %s, %s, %s, %s, %s::jsonb)
ON CONFLICT (dedup_key) DO NOTHING
RETURNING id
"""


def store(envelope: Envelope, scheme: str, body: str) -> int | None:
    """Queue a verified event: its new id, or None when the same event is already in.

    One statement, and no ORM on this hot path: the received JSON text goes to
    ``jsonb`` as it is (the receiver has checked that PostgreSQL can store every
    value in it), through a plain psycopg cursor with server-side parameters on
    the request's own connection (no query text built in Python, no per-request
    ``SELECT 1`` health check). A connection the server closed while it sat idle
    (``CONN_MAX_AGE``) is replaced and the statement sent once more: the INSERT
    is idempotent (``ON CONFLICT DO NOTHING``).
    """
    params = (
        envelope.dedup_key,
        envelope.kind,
        scheme,
        envelope.protocol,
        envelope.task_id,
        envelope.status,
        envelope.timestamp,
        body,
    )
    for attempt in (1, 2):
        connection.ensure_connection()
        try:
            with psycopg.Cursor(connection.connection) as cursor:
                cursor.execute(_INSERT, params)
                row = cursor.fetchone()
        except psycopg.OperationalError:
            if attempt == 2 or connection.in_atomic_block:
                raise
            connection.close()
            continue
        return row[0] if row else None
    raise AssertionError("unreachable")


# --- applying ------------------------------------------------------------------------


@dataclass(slots=True)
class Claimed:
    id: int
    kind: str
    protocol: str
    task_id: str
    payload: Any

    @property
    def key(self) -> TaskKey:
        return (self.protocol, self.task_id)


@dataclass
class Applied:
    """What one batch did: events applied (by outcome), failed, put back for later."""

    claimed: int = 0
    applied: int = 0
    failed: int = 0
    deferred: int = 0
    outcomes: dict[str, int] = field(default_factory=dict)

    def add(self, other: Applied) -> None:
        self.claimed += other.claimed
        self.applied += other.applied
        self.failed += other.failed
        self.deferred += other.deferred
        for name, n in other.outcomes.items():
            self.outcomes[name] = self.outcomes.get(name, 0) + n


class WebhookBatch(Batch):
    """A write batch whose records are inbox events (record index = event id).

    Each state change's audit entry names the event that made it, and every task
    an event reaches is flagged for a re-read (the API is truth) in the same
    row write when the event changes the task.
    """

    def __init__(self, actor: Actor, now: dt.datetime) -> None:
        super().__init__(actor)
        self.now = now
        self.reread: set[TaskKey] = set()

    def answer(self, index: int, result: IngestResult) -> None:
        super().answer(index, result)
        task = result.obj
        if result.outcome in (Outcome.CREATED, Outcome.UPDATED):
            task.resync_requested_at = self.now  # written with the row itself
        elif task is not None and task.resync_requested_at != self.now:
            self.reread.add((task.protocol, task.task_id))

    def audit_change(self, index: int, change: dict[str, Any] | None) -> None:
        if change is not None:
            change["detail"] = {**change.get("detail", {}), "webhook_event": index}
        super().audit_change(index, change)


_CLAIM = f"""
SELECT id, kind, protocol, task_id, payload FROM {_TABLE}
WHERE status = 'queued' ORDER BY id LIMIT %s
FOR UPDATE SKIP LOCKED
"""

# Objects whose earlier event is still queued outside this claim: another worker
# holds it (or it committed late); theirs must apply first.
_HELD_ELSEWHERE = f"""
SELECT DISTINCT e.protocol, e.task_id
FROM {_TABLE} AS e
JOIN jsonb_to_recordset(%s::jsonb) AS c(protocol text, task_id text, first_id bigint)
  ON e.protocol = c.protocol AND e.task_id = c.task_id
WHERE e.status = 'queued' AND e.id < c.first_id
"""

# The marks travel as one JSON array (encoded in C), not as Python-dumped arrays.
_MARK = f"""
UPDATE {_TABLE} AS e
SET status = v.status, result = v.result, error = v.error, attempts = e.attempts + 1,
    applied_at = CASE WHEN v.status = 'applied' THEN now() END
FROM jsonb_to_recordset(%s::jsonb) AS v(id bigint, status text, result text, error text)
WHERE e.id = v.id
"""


def _cursor() -> psycopg.Cursor:
    """A psycopg cursor with server-side parameters on Django's connection: arrays of a
    thousand values travel as parameters instead of being quoted into SQL in Python."""
    connection.ensure_connection()
    return psycopg.Cursor(connection.connection)


def claim(limit: int) -> list[Claimed]:
    """Lock up to ``limit`` queued events, oldest first; call inside a transaction."""
    with _cursor() as cursor:
        cursor.execute(_CLAIM, [limit])
        rows = cursor.fetchall()
    return [Claimed(i, kind, p, t, _json(payload)) for i, kind, p, t, payload in rows]


def _json(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str | bytes) else value


def _held_elsewhere(events: list[Claimed]) -> set[TaskKey]:
    first: dict[TaskKey, int] = {}
    for event in events:
        first.setdefault(event.key, event.id)
    rows = [{"protocol": p, "task_id": t, "first_id": i} for (p, t), i in first.items()]
    with _cursor() as cursor:
        cursor.execute(_HELD_ELSEWHERE, [json.dumps(rows)])
        return {(protocol, task_id) for protocol, task_id in cursor.fetchall()}


def apply_batch(limit: int = BATCH_SIZE, *, actor: Actor = ACTOR) -> Applied:
    """Claim, apply and mark one batch of queued events, all in one transaction."""
    with transaction.atomic():
        events = claim(limit)
        report = Applied(claimed=len(events))
        if not events:
            return report
        held = _held_elsewhere(events)
        if held:
            report.deferred = sum(1 for e in events if e.key in held)
            events = [e for e in events if e.key not in held]
        marks = _apply(events, actor)
        _mark(marks)
    for status, result, _error in marks.values():
        if status == APPLIED:
            report.applied += 1
            report.outcomes[result] = report.outcomes.get(result, 0) + 1
        else:
            report.failed += 1
    return report


Mark = tuple[str, str, str]  # (status, result, error)
# Errors that say the database is failing, not the event: nothing is marked for them.
SYSTEMIC = (
    OperationalError,
    InterfaceError,
    ProgrammingError,
    psycopg.OperationalError,
    psycopg.InterfaceError,
    psycopg.ProgrammingError,
)


@functools.cache
def snapshot_fields() -> tuple[str, ...]:
    """The fields a parsed BeeOS task carries (``TaskSnapshot.fields``, the task's
    columns of the same names), as the one parser names them."""
    return tuple(
        parse_openapi_task({"task_id": "t", "status": "queued"}, agent_optional=True).fields
    )


def _apply(events: list[Claimed], actor: Actor) -> dict[int, Mark]:
    """Each event's mark; the writes happen here, inside the caller's transaction."""
    if not events:
        return {}
    # Read and locked once, in key order (as write_tasks would: two writers never
    # deadlock): the base each task_status event's snapshot is built on, and the rows
    # the batch writes.
    stored = lock_tasks({e.key for e in events})
    items, marks = snapshots(events, stored)
    now = timezone.now()
    try:
        with transaction.atomic():
            batch = WebhookBatch(actor, now)
            write_tasks(batch, items, stored=stored)
            batch.flush()
            _flag_reread(batch.reread, now)
        results = batch.results
    except Exception:  # noqa: BLE001 - whatever it was, it must not block the queue
        # One bad row fails the set-based statement: replay event by event, each in
        # a savepoint, so only the events that really can't be written fail (each
        # reading its rows again: the failed attempt changed ``stored`` in memory).
        log.warning("webhook batch rolled back; applying it event by event", exc_info=True)
        results = {}
        broken = 0
        for index, snapshot in items:
            try:
                with transaction.atomic():
                    batch = WebhookBatch(actor, now)
                    write_tasks(batch, [(index, snapshot)])
                    batch.flush()
                    _flag_reread(batch.reread, now)
                results.update(batch.results)
            except Exception as exc:  # noqa: BLE001 - kept on the event, for an admin
                if isinstance(exc, SYSTEMIC) and not results:
                    broken += 1
                    if broken == min(3, len(items)):
                        # The database, not the events (a schema behind the code, a
                        # dropped connection): mark nothing, the batch is tried again.
                        raise
                log.warning("webhook event %s not applied: %s", index, exc)
                marks[index] = (FAILED, "", _error_text(exc))
    for index, result in results.items():
        marks[index] = (APPLIED, str(result.outcome), "")
    return marks


def snapshots(
    events: Sequence[Claimed], stored: dict[TaskKey, Task]
) -> tuple[list[tuple[int, TaskSnapshot]], dict[int, Mark]]:
    """Each event as the task snapshot it stands for, in received order, and the
    marks of the events that can't be read as one.

    A ``task_status`` event carries only a status and a time: its snapshot is the
    task as the events before it left it (``stored``, then followed in memory with
    the storage rules' own ``decide_task``) with the new status, exactly as
    applying the events one by one would build it.
    """
    current = {key: _Shadow.of(task) for key, task in stored.items()}
    items: list[tuple[int, TaskSnapshot]] = []
    failed: dict[int, Mark] = {}
    for event in events:
        try:
            if event.kind == Event.Kind.A2A_PUSH:
                snapshot = parse_a2a_task(event.payload)
            else:
                shadow = current.get(event.key)
                snapshot = task_event_snapshot(event.payload, shadow)
                outcome, _ = decide_task(snapshot, shadow)  # type: ignore[arg-type]
                if outcome == Outcome.CREATED:
                    current[event.key] = _Shadow.created(snapshot)
                elif outcome == Outcome.UPDATED and shadow is not None:
                    shadow.take(snapshot)
        except Exception as exc:  # noqa: BLE001 - an IngestError, or a payload no code foresaw
            failed[event.id] = (FAILED, "", _error_text(exc))
            continue
        items.append((event.id, snapshot))
    return items, failed


@dataclass(slots=True)
class _Shadow:
    """A task as the events before the next one left it: its columns named by
    ``snapshot_fields`` (kept as ``rules.new_task`` / ``apply_task`` store them),
    its raw state, raw payload and digest (what ``decide_task`` compares), without
    building a model instance per event."""

    protocol: str
    raw_state: str
    payload_digest: str
    raw_payload: dict[str, Any]
    fields: dict[str, Any]

    @property
    def updated_at(self) -> dt.datetime | None:
        return self.fields["updated_at"]

    @classmethod
    def of(cls, task: Task) -> _Shadow:
        fields = {name: getattr(task, name) for name in snapshot_fields()}
        return cls(task.protocol, task.raw_state, task.payload_digest, task.raw_payload, fields)

    @classmethod
    def created(cls, snapshot: TaskSnapshot) -> _Shadow:
        fields = dict(snapshot.fields)
        if fields.get("created_at") is None:
            fields["created_at"] = snapshot.updated_at or timezone.now()
        if fields.get("updated_at") is None:
            fields["updated_at"] = fields["created_at"]
        return cls(
            snapshot.protocol,
            snapshot.raw_state,
            snapshot.payload_digest,
            snapshot.payload,
            fields,
        )

    def take(self, snapshot: TaskSnapshot) -> None:
        for name, value in snapshot.fields.items():
            if name != "created_at" or value is not None:
                self.fields[name] = value
        if self.fields.get("updated_at") is None:
            self.fields["updated_at"] = self.fields.get("created_at")
        self.raw_state = snapshot.raw_state
        self.raw_payload = snapshot.payload
        self.payload_digest = snapshot.payload_digest


def task_event_snapshot(payload: dict[str, Any], task: _Shadow | None) -> TaskSnapshot:
    """The stored task with a ``task_status`` event's status and time on top.

    A new task is the event alone, parsed as any first snapshot. A stored task's
    fields are its columns (what the parser made of its payload when it was
    written), not its raw payload parsed again: the event moves the status, the
    update time, the context and, on a terminal status, the completion time, in
    the raw payload and in the fields alike.
    """
    # Typed reads only: the receiver validated the whole event before storing it.
    r = Reader(payload, prefix="event.")
    task_id = r.id("task_id")
    status = r.str("status", required=True, max_length=64)
    timestamp = r.datetime("timestamp", required=True)
    context_id = r.str("context_id")
    r.raise_if_invalid()
    assert timestamp is not None  # required above
    stamp = timestamp.isoformat()
    ends = states.is_terminal(states.OPENAPI, status)
    if task is None:
        first: dict[str, Any] = {"task_id": task_id, "agent_id": "", "status": status}
        first["updated_at"] = stamp
        if context_id:
            first["context_id"] = context_id
        if ends:
            first["completed_at"] = stamp
        return parse_openapi_task(first, agent_optional=True)
    if not isinstance(task.raw_payload, dict):  # a row an older version left
        raise IngestError({"task.raw_payload": [gettext("must be a JSON object")]})
    base = dict(task.raw_payload)
    base.setdefault("agent_id", task.fields["agent_id"])
    base.update({"status": status, "updated_at": stamp})
    fields = {**task.fields, "updated_at": timestamp}
    if context_id:
        base["context_id"] = fields["context_id"] = context_id
    if ends and not base.get("completed_at"):
        base["completed_at"] = stamp
        fields["completed_at"] = timestamp
    return TaskSnapshot(states.OPENAPI, task_id, status, fields, timestamp, base)


def _flag_reread(keys: set[TaskKey], now: dt.datetime) -> None:
    """Tasks an event reached without rewriting them: flag them for a re-read too."""
    if keys:
        Task.objects.filter(in_keys(Task, ["protocol", "task_id"], sorted(keys))).update(
            resync_requested_at=now
        )


def _mark(marks: dict[int, Mark]) -> None:
    if not marks:
        return
    rows = [
        {"id": i, "status": status, "result": result, "error": error}
        for i, (status, result, error) in sorted(marks.items())
    ]
    with _cursor() as cursor:
        cursor.execute(_MARK, [json.dumps(rows)])


def _error_text(exc: Exception) -> str:
    text = f"{type(exc).__name__}: {exc}"
    return text if len(text) <= ERROR_MAX else text[: ERROR_MAX - 1] + "…"


def drain(
    *, limit: int = BATCH_SIZE, max_batches: int | None = None, actor: Actor = ACTOR
) -> Applied:
    """Apply batches until nothing is queued (or ``max_batches``); the total."""
    total = Applied()
    batches = 0
    while max_batches is None or batches < max_batches:
        report = apply_batch(limit, actor=actor)
        batches += 1
        total.add(report)
        if report.claimed == 0 or report.claimed == report.deferred:
            break
    return total


# --- retrying ------------------------------------------------------------------------


def retry(event_id: int, *, actor: Actor) -> bool:
    """Queue a failed event again (audited); False when it is not failed (any more)."""
    with transaction.atomic():
        event = Event.objects.select_for_update().filter(pk=event_id, status=FAILED).first()
        if event is None:
            return False
        before = {"status": event.status, "error": event.error, "attempts": event.attempts}
        event.status = QUEUED
        event.error = ""
        event.result = ""
        event.save(update_fields=["status", "error", "result"])
        auditlog.record(
            actor,
            "webhook.retry",
            "webhook",
            str(event.pk),
            before=before,
            after={"status": QUEUED},
            detail={"kind": event.kind, "task_id": event.task_id, "protocol": event.protocol},
        )
    return True
