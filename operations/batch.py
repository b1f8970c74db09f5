"""Set-based writes of runtime operations and their events (see ``beeos_console.batch``).

Same rules as ``operations.services`` (the same ``decide_*``/``apply_*``
functions), one locked read and one or two writes per table per call.
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal

from django.db import connection
from django.db.models import F
from django.db.models.fields.tuple_lookups import Tuple, TupleIn

from beeos_console import counters
from beeos_console.batch import Batch, insert_rows, upsert_by_pk
from beeos_console.mirror import IngestResult, Outcome

from .models import RuntimeOperation, RuntimeOperationEvent
from .services import (
    EventSnapshot,
    OperationSnapshot,
    apply_operation,
    decide_event,
    decide_operation,
    new_event,
    new_operation,
)


def write_operations(batch: Batch, items: Sequence[tuple[int, OperationSnapshot]]) -> None:
    """RuntimeOperationSnapshots in record order."""
    if not items:
        return
    ids = sorted({s.operation_id for _, s in items})
    stored: dict[str, RuntimeOperation] = {
        op.operation_id: op
        for op in RuntimeOperation.objects.select_for_update()
        .filter(operation_id__in=ids)
        .order_by("operation_id")
    }
    counted_before = {
        i: ((op.status, op.created_at), (op.raw_status[:32], op.created_at))
        for i, op in stored.items()
    }
    current: dict[str, RuntimeOperation] = dict(stored)
    created: list[str] = []
    changed: set[str] = set()
    for index, snapshot in items:
        op = current.get(snapshot.operation_id)
        outcome, note = decide_operation(snapshot, op)
        if outcome == Outcome.CREATED:
            op = current[snapshot.operation_id] = new_operation(snapshot)
            created.append(snapshot.operation_id)
        elif outcome == Outcome.UPDATED:
            batch.audit_change(index, apply_operation(op, snapshot))
            changed.add(snapshot.operation_id)
        batch.answer(index, IngestResult(outcome, snapshot.operation_id, op, note))

    new_rows = [current[i] for i in created]
    insert_rows(RuntimeOperation, new_rows, key=["operation_id"])
    updated = sorted(changed & stored.keys())
    upsert_by_pk(RuntimeOperation, [current[i] for i in updated], keep=["first_seen_at"])
    for op in new_rows:
        batch.count_create(counters.OPERATION, op.status, op.created_at)
        batch.count_create(counters.OPERATION_RAW, op.raw_status[:32], op.created_at)
    for i in updated:
        op = current[i]
        status_before, raw_before = counted_before[i]
        batch.count_change(counters.OPERATION, status_before, (op.status, op.created_at))
        batch.count_change(counters.OPERATION_RAW, raw_before, (op.raw_status[:32], op.created_at))
    _refile_early_events(new_rows)


def _refile_early_events(new_rows: list[RuntimeOperation]) -> None:
    """Events that arrived before their operation: link them now."""
    if not new_rows:
        return
    table = RuntimeOperationEvent._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {table} AS e SET operation_id = v.op_pk "
            "FROM unnest(%s::text[], %s::bigint[]) AS v(operation_id_raw, op_pk) "
            "WHERE e.operation_id IS NULL AND e.operation_id_raw = v.operation_id_raw",
            [[op.operation_id for op in new_rows], [op.pk for op in new_rows]],
        )


def write_events(batch: Batch, items: Sequence[tuple[int, EventSnapshot]]) -> None:
    """Operation events in record order; run after ``write_operations`` so they find theirs."""
    if not items:
        return
    keys = sorted({(s.operation_id, s.event_id) for _, s in items})
    current: dict[tuple[str, Decimal], RuntimeOperationEvent] = {
        (e.operation_id_raw, e.event_id): e
        for e in RuntimeOperationEvent.objects.filter(
            TupleIn(Tuple(F("operation_id_raw"), F("event_id")), keys)
        )
    }
    new_rows: list[RuntimeOperationEvent] = []
    for index, snapshot in items:
        key = (snapshot.operation_id, snapshot.event_id)
        event = current.get(key)
        outcome, note = decide_event(snapshot, event)
        if outcome == Outcome.CREATED:
            event = current[key] = new_event(snapshot, None)
            new_rows.append(event)
        batch.answer(index, IngestResult(outcome, snapshot.label, event, note))
    if not new_rows:
        return
    op_pk = dict(
        RuntimeOperation.objects.filter(
            operation_id__in={e.operation_id_raw for e in new_rows}
        ).values_list("operation_id", "pk")
    )
    for event in new_rows:
        event.operation_id = op_pk.get(event.operation_id_raw)
    insert_rows(RuntimeOperationEvent, new_rows)
