"""The storage rules for tasks and messages, pure (no database).

DESIGN.md, Storage rules: the same snapshot twice changes nothing, an older
snapshot never overwrites a newer one, and a terminal state never goes back to
a non-terminal one. Both write paths (``write``, one record; ``batch``, many)
ask the same functions here, so they cannot disagree.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.utils.translation import gettext

from beeos_console.mirror import counters
from beeos_console.mirror.edge import Outcome, clock_note, digest, is_older, stored_json
from beeos_console.mirror.states import PROCESSING, QUEUED, Projection
from tasks import states
from tasks.models import Message, Task

from .snapshots import MessageSnapshot, TaskSnapshot, a2a_text

_RANK = {QUEUED: 0, PROCESSING: 1}

# The maintained counters a task is counted under (the registry's ``counters``; both
# write paths, re-projection, prune and ``rebuild_counters`` read this): by display
# status, and by protocol and display status ("a2a:processing").
COUNTERS: counters.Counted = {
    counters.TASK: "status",
    counters.TASK_PROTOCOL: ("protocol", "status"),
}


def _rank(projection: Projection) -> int:
    """Lifecycle progress, for snapshots that carry no usable timestamp."""
    if projection.is_terminal:
        return 2
    return _RANK.get(projection.status, -1)


def state_summary(task: Task) -> dict[str, Any]:
    """The state fields an audit entry keeps before and after a change."""
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
    A snapshot stamped in the future (clock skew) is stored with a note.
    """
    if task is None:
        return Outcome.CREATED, clock_note(snapshot.updated_at)
    if task.payload_digest == snapshot.payload_digest:
        return Outcome.UNCHANGED, ""
    projection = snapshot.projection
    stored = states.project(task.protocol, task.raw_state)
    if not authoritative and is_older(snapshot.updated_at, task.updated_at):
        return Outcome.STALE, gettext("older than the stored snapshot")
    if stored.is_terminal and not projection.is_terminal:
        return Outcome.STALE, gettext("a terminal state never goes back")
    same_time = snapshot.updated_at is None or snapshot.updated_at == task.updated_at
    if not authoritative and same_time and _rank(projection) < _rank(stored):
        return Outcome.STALE, gettext("behind the stored lifecycle")
    return Outcome.UPDATED, clock_note(snapshot.updated_at)


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
    before = state_summary(task)
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
    after = state_summary(task)
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


_A2A_HISTORY_PROJECTION = states.project_message("completed").as_fields()


def a2a_history_values(task: Task, snapshot: TaskSnapshot) -> list[tuple[str, dict[str, Any]]]:
    """(message_id, field values) of each A2A history message the snapshot carries."""
    rows = []
    for position, item in enumerate(snapshot.history or []):
        payload = stored_json(item)
        rows.append(
            (
                item["messageId"],
                {
                    "task": task,
                    "conversation_id": item.get("contextId") or task.context_id,
                    "type": "a2a_message",
                    "sender": task.caller_agent_id if item.get("role") == "user" else task.agent_id,
                    "role": item.get("role", ""),
                    "body": a2a_text(item),
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


def decide_message(snapshot: MessageSnapshot, message: Message | None) -> tuple[Outcome, str]:
    """Pure: what the storage rules make of an envelope against the stored one.

    Once terminal, an envelope is immutable (seed).
    """
    if message is None:
        return Outcome.CREATED, clock_note(snapshot.updated_at)
    if message.payload_digest == snapshot.payload_digest:
        return Outcome.UNCHANGED, ""
    stored_updated = message.updated_at or message.created_at
    if is_older(snapshot.updated_at, stored_updated):
        return Outcome.STALE, gettext("older than stored")
    if states.is_message_terminal(message.state):
        return Outcome.STALE, gettext("a terminal envelope is immutable")
    return Outcome.UPDATED, clock_note(snapshot.updated_at)
