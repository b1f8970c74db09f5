"""Set-based writes of task snapshots and message envelopes (see ``beeos_console.mirror.batch``).

The "write many" path of an ingest call. Same rules as the one-record path
(``write``): it asks the same ``rules`` functions, in fewer statements: per
call, one locked read and one or two writes per table, whatever the number of
records.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from beeos_console.mirror import agent_counters, counters
from beeos_console.mirror.batch import (
    Batch,
    in_keys,
    insert_rows,
    link_orphans,
    lock_by_key,
    upsert_by_pk,
    write_rows,
)
from tasks.models import Artifact, Message, Task

from .rules import (
    COUNTERS,
    a2a_history_values,
    apply_task,
    artifact_values,
    decide_message,
    decide_task,
    new_task,
)
from .snapshots import MessageSnapshot, TaskSnapshot

TaskKey = tuple[str, str]


def write_tasks(
    batch: Batch,
    items: Sequence[tuple[int, TaskSnapshot]],
    *,
    stored: dict[TaskKey, Task] | None = None,
) -> None:
    """Task snapshots (OpenAPI, product, A2A) in record order.

    ``stored``: the rows of these snapshots' keys, whole, as the caller read and
    locked them in this transaction (``lock_tasks``) and left them; else read here.
    """
    if not items:
        return
    if stored is None:
        stored = lock_tasks({(s.protocol, s.task_id) for _, s in items})
    counted_before = {key: counters.keys_of(COUNTERS, t) for key, t in stored.items()}
    agents_before = {key: agent_counters.state_of(t) for key, t in stored.items()}
    history: dict[str, dict[str, Any]] = {}
    artifacts: dict[tuple[int, str], tuple[Task, dict[str, Any]]] = {}

    def children(task: Task, snapshot: TaskSnapshot) -> None:
        # Children take the task's fields as they are at this record.
        for message_id, values in a2a_history_values(task, snapshot):
            history[message_id] = values
        for artifact_id, values in artifact_values(snapshot):
            artifacts[(id(task), artifact_id)] = (task, values)

    def create(index: int, snapshot: TaskSnapshot) -> Task:
        task = new_task(snapshot)
        children(task, snapshot)
        return task

    def update(index: int, task: Task, snapshot: TaskSnapshot) -> None:
        batch.audit_change(index, apply_task(task, snapshot))
        children(task, snapshot)

    tasks = batch.decide_in_order(
        items,
        stored,
        key=lambda s: (s.protocol, s.task_id),
        decide=decide_task,
        create=create,
        update=update,
        label=lambda s: s.task_id,
    )
    new_rows = tasks.new_rows
    # A key another writer added meanwhile fails the statement, and so the batch.
    insert_rows(Task, new_rows, key=["protocol", "task_id"])
    upsert_by_pk(Task, tasks.updated_rows, keep=["first_seen_at"])
    for task in new_rows:
        batch.count_row_created(COUNTERS, task)
        batch.agents.created(task)
    for key in tasks.updated_keys:
        task = tasks.current[key]
        batch.count_row_changed(COUNTERS, counted_before[key], task)
        batch.agents.changed(agents_before[key], task)
    _refile_early_messages(new_rows)
    _write_children(history, artifacts)


def lock_tasks(keys: Iterable[TaskKey]) -> dict[TaskKey, Task]:
    """The stored tasks of ``keys`` (protocol, task_id), locked in key order."""
    return lock_by_key(
        Task.objects.filter(in_keys(Task, ["protocol", "task_id"], sorted(keys))),
        ["protocol", "task_id"],
    )


def _refile_early_messages(new_rows: list[Task]) -> None:
    """Messages that arrived before their task: file them under it (the first new one)."""
    first_by_channel: dict[str, int] = {}
    for task in new_rows:
        if task.channel_id:
            first_by_channel.setdefault(task.channel_id, task.pk)
    link_orphans(Message, fk="task", by="conversation_id", parents=first_by_channel)


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
    stored: dict[str, Message] = lock_by_key(
        Message.objects.filter(source=Message.Source.ENVELOPE, message_id__in=ids),
        ["message_id"],
    )

    def create(index: int, snapshot: MessageSnapshot) -> Message:
        return Message(
            source=Message.Source.ENVELOPE, message_id=snapshot.message_id, **snapshot.values
        )

    def update(index: int, message: Message, snapshot: MessageSnapshot) -> None:
        for name, value in snapshot.values.items():
            setattr(message, name, value)

    messages = batch.decide_in_order(
        items,
        stored,
        key=lambda s: s.message_id,
        decide=decide_message,
        create=create,
        update=update,
        label=lambda s: s.message_id,
    )
    new_rows, updated_rows = messages.new_rows, messages.updated_rows
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
