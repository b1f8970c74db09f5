"""Set-based writes of task snapshots and message envelopes (see ``beeos_console.batch``).

Same rules as ``tasks.services`` (it asks the same ``decide_*``/``apply_*``
functions), fewer statements: per call, one locked read and one or two writes
per table, whatever the number of records.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db import connection
from django.db.models import F
from django.db.models.fields.tuple_lookups import Tuple, TupleIn

from beeos_console import counters
from beeos_console.batch import Batch, insert_rows, upsert_by_pk, write_rows
from beeos_console.mirror import IngestResult, Outcome, digest

from . import states
from .models import Artifact, Message, Task
from .services import (
    MessageSnapshot,
    TaskSnapshot,
    a2a_history_values,
    apply_task,
    artifact_values,
    decide_message,
    decide_task,
    new_task,
)

TaskKey = tuple[str, str]


def write_tasks(batch: Batch, items: Sequence[tuple[int, TaskSnapshot]]) -> None:
    """Task snapshots (OpenAPI, product, A2A) in record order."""
    if not items:
        return
    keys = sorted({(s.protocol, s.task_id) for _, s in items})
    stored: dict[TaskKey, Task] = {
        (t.protocol, t.task_id): t
        for t in Task.objects.select_for_update()
        .filter(TupleIn(Tuple(F("protocol"), F("task_id")), keys))
        .order_by("protocol", "task_id")
    }
    counted_before = {key: (t.status, t.created_at) for key, t in stored.items()}
    current: dict[TaskKey, Task] = dict(stored)
    created: list[TaskKey] = []
    changed: set[TaskKey] = set()
    history: dict[str, dict[str, Any]] = {}
    artifacts: dict[tuple[int, str], tuple[Task, dict[str, Any]]] = {}
    for index, snapshot in items:
        key = (snapshot.protocol, snapshot.task_id)
        projection = states.project(snapshot.protocol, snapshot.raw_state)
        payload_digest = digest(snapshot.payload)
        task = current.get(key)
        outcome, note = decide_task(snapshot, projection, payload_digest, task)
        if outcome == Outcome.CREATED:
            task = current[key] = new_task(snapshot, projection, payload_digest)
            created.append(key)
        elif outcome == Outcome.UPDATED:
            batch.audit_change(index, apply_task(task, snapshot, projection, payload_digest))
            changed.add(key)
        batch.answer(index, IngestResult(outcome, snapshot.task_id, task, note))
        if outcome in (Outcome.CREATED, Outcome.UPDATED):
            # Children take the task's fields as they are at this record.
            for message_id, values in a2a_history_values(task, snapshot):
                history[message_id] = values
            for artifact_id, values in artifact_values(snapshot):
                artifacts[(id(task), artifact_id)] = (task, values)

    new_rows = [current[key] for key in created]
    # A key another writer added meanwhile fails the statement, and so the batch.
    insert_rows(Task, new_rows, key=["protocol", "task_id"])
    updated_rows = [current[key] for key in changed if key in stored]
    upsert_by_pk(Task, updated_rows, keep=["first_seen_at"])
    for task in new_rows:
        batch.count_create(counters.TASK, task.status, task.created_at)
    for key in changed & stored.keys():
        task = current[key]
        batch.count_change(counters.TASK, counted_before[key], (task.status, task.created_at))
    _refile_early_messages(new_rows)
    _write_children(history, artifacts)


def _refile_early_messages(new_rows: list[Task]) -> None:
    """Messages that arrived before their task: file them under it (the first new one)."""
    first_by_channel: dict[str, int] = {}
    for task in new_rows:
        if task.channel_id:
            first_by_channel.setdefault(task.channel_id, task.pk)
    if not first_by_channel:
        return
    table = Message._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {table} AS m SET task_id = v.task_pk "
            "FROM unnest(%s::text[], %s::bigint[]) AS v(channel_id, task_pk) "
            "WHERE m.task_id IS NULL AND m.conversation_id = v.channel_id",
            [list(first_by_channel), list(first_by_channel.values())],
        )


def _write_children(
    history: dict[str, dict[str, Any]],
    artifacts: dict[tuple[int, str], tuple[Task, dict[str, Any]]],
) -> None:
    """A2A history messages and artifacts: last snapshot wins, as ``update_or_create``."""
    if history:
        write_rows(
            Message,
            [
                Message(source=Message.Source.A2A, message_id=message_id, **values)
                for message_id, values in sorted(history.items())
            ],
            conflict=["source", "message_id"],
            update=[*next(iter(history.values())), "mirrored_at"],
        )
    if artifacts:
        rows = [
            Artifact(task=task, artifact_id=artifact_id, **values)
            for (_, artifact_id), (task, values) in artifacts.items()
        ]
        rows.sort(key=lambda a: (a.task.pk, a.artifact_id))
        write_rows(
            Artifact,
            rows,
            conflict=["task", "artifact_id"],
            update=["name", "description", "parts", "metadata", "extensions"],
        )


def write_messages(batch: Batch, items: Sequence[tuple[int, MessageSnapshot]]) -> None:
    """Message envelopes in record order; run after ``write_tasks`` so they find their task."""
    if not items:
        return
    ids = sorted({s.message_id for _, s in items})
    stored: dict[str, Message] = {
        m.message_id: m
        for m in Message.objects.select_for_update()
        .filter(source=Message.Source.ENVELOPE, message_id__in=ids)
        .order_by("message_id")
    }
    current: dict[str, Message] = dict(stored)
    created: list[str] = []
    changed: set[str] = set()
    for index, snapshot in items:
        message = current.get(snapshot.message_id)
        outcome, note = decide_message(snapshot, message)
        if outcome == Outcome.CREATED:
            message = current[snapshot.message_id] = Message(
                source=Message.Source.ENVELOPE, message_id=snapshot.message_id, **snapshot.values
            )
            created.append(snapshot.message_id)
        elif outcome == Outcome.UPDATED:
            for name, value in snapshot.values.items():
                setattr(message, name, value)
            changed.add(snapshot.message_id)
        batch.answer(index, IngestResult(outcome, snapshot.message_id, message, note))

    new_rows = [current[i] for i in created]
    updated_rows = [current[i] for i in sorted(changed) if i in stored]
    written = new_rows + updated_rows
    task_of = _task_by_channel({m.conversation_id for m in written if m.conversation_id})
    for message in written:
        message.task_id = task_of.get(message.conversation_id)
    insert_rows(Message, new_rows)
    upsert_by_pk(Message, updated_rows)


def _task_by_channel(channel_ids: set[str]) -> dict[str, int]:
    """The task each conversation belongs to, chosen as the one-record path chooses it."""
    if not channel_ids:
        return {}
    rows = (
        Task.objects.filter(channel_id__in=channel_ids)
        .order_by("channel_id", "protocol", "id")
        .distinct("channel_id")
        .values_list("channel_id", "pk")
    )
    return dict(rows)
