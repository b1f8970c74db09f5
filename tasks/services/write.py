"""The one-record write path for tasks and messages.

Each ``ingest_*`` takes one wire snapshot, validates it at the edge
(``snapshots``), and writes it whole or not at all (one transaction) as the
storage rules (``rules``) decide, stamping the product projection. Every change
of product status is audited with the writer as actor. Many records at once:
``batch``.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction

from beeos_console.auditlog import services as auditlog
from beeos_console.auditlog.services import Actor
from beeos_console.mirror import agent_counters, counters
from beeos_console.mirror.edge import IngestResult, Outcome
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
from .snapshots import (
    TaskSnapshot,
    parse_a2a_task,
    parse_message,
    parse_openapi_task,
    parse_product_task,
)


def write_task(
    snapshot: TaskSnapshot, *, actor: Actor, authoritative: bool = False
) -> IngestResult:
    """The one-record write path for a task row (many at once: ``batch``).

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
            return _create_task(snapshot, note)
        if outcome != Outcome.UPDATED:
            return IngestResult(outcome, task.task_id, task, note)
        counted_before = counters.keys_of(COUNTERS, task)
        agents_before = agent_counters.state_of(task)
        change = apply_task(task, snapshot)
        task.save()
        counters.on_row_changed(COUNTERS, counted_before, task)
        agent_counters.on_write(agents_before, task)
        _write_a2a_children(task, snapshot)
        if change is not None:
            auditlog.record(actor, **change)
        return IngestResult(Outcome.UPDATED, task.task_id, task, note)


def _create_task(snapshot: TaskSnapshot, note: str = "") -> IngestResult:
    task = new_task(snapshot)
    task.save(force_insert=True)
    counters.on_row_created(COUNTERS, task)
    agent_counters.on_write(None, task)
    if task.channel_id:
        # Messages that arrived before their task: file them under it now.
        Message.objects.filter(task__isnull=True, conversation_id=task.channel_id).update(task=task)
    _write_a2a_children(task, snapshot)
    return IngestResult(Outcome.CREATED, task.task_id, task, note)


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
            return IngestResult(Outcome.CREATED, message_id, message, note)
        for name, value in snapshot.values.items():
            setattr(message, name, value)
        message.task = task
        message.save()
        return IngestResult(Outcome.UPDATED, message_id, message, note)
