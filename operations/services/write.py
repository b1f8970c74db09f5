"""The one-record write path for runtime operations and their events.

Each ``ingest_*`` validates one wire snapshot at the edge (``snapshots``) and
writes it whole or not at all (one transaction) as the storage rules
(``rules``) decide. Status changes are audited with the writer as actor. Many
records at once: ``batch``.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction

from beeos_console.auditlog import services as auditlog
from beeos_console.auditlog.services import Actor
from beeos_console.mirror import counters
from beeos_console.mirror.edge import IngestResult, Outcome
from operations.models import RuntimeOperation, RuntimeOperationEvent

from .rules import (
    COUNTERS,
    apply_operation,
    decide_event,
    decide_operation,
    new_event,
    new_operation,
)
from .snapshots import parse_event, parse_operation_snapshot


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
            counters.on_row_created(COUNTERS, op)
            RuntimeOperationEvent.objects.filter(
                operation__isnull=True, operation_id_raw=operation_id
            ).update(operation=op)
            return IngestResult(Outcome.CREATED, operation_id, op, note)
        if outcome != Outcome.UPDATED:
            return IngestResult(outcome, operation_id, op, note)
        counted_before = counters.keys_of(COUNTERS, op)
        change = apply_operation(op, snapshot)
        op.save()
        counters.on_row_changed(COUNTERS, counted_before, op)
        if change is not None:
            auditlog.record(actor, **change)
        return IngestResult(Outcome.UPDATED, operation_id, op, note)


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
