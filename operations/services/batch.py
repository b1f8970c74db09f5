"""Set-based writes of runtime operations and their events (see ``beeos_console.mirror.batch``).

The "write many" path of an ingest call. Same rules as the one-record path
(``write``): the same ``rules`` functions, in one locked read and one or two
writes per table per call.
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal

from beeos_console.mirror import counters
from beeos_console.mirror.batch import (
    Batch,
    in_keys,
    insert_rows,
    link_orphans,
    lock_by_key,
    upsert_by_pk,
)
from operations.models import RuntimeOperation, RuntimeOperationEvent

from .rules import (
    COUNTERS,
    apply_operation,
    decide_event,
    decide_operation,
    new_event,
    new_operation,
)
from .snapshots import EventSnapshot, OperationSnapshot


def write_operations(batch: Batch, items: Sequence[tuple[int, OperationSnapshot]]) -> None:
    """RuntimeOperationSnapshots in record order."""
    if not items:
        return
    ids = sorted({s.operation_id for _, s in items})
    stored: dict[str, RuntimeOperation] = lock_by_key(
        RuntimeOperation.objects.filter(operation_id__in=ids), ["operation_id"]
    )
    counted_before = {i: counters.keys_of(COUNTERS, op) for i, op in stored.items()}
    ops = batch.decide_in_order(
        items,
        stored,
        key=lambda s: s.operation_id,
        decide=decide_operation,
        create=lambda index, s: new_operation(s),
        update=lambda index, op, s: batch.audit_change(index, apply_operation(op, s)),
        label=lambda s: s.operation_id,
    )
    new_rows = ops.new_rows
    insert_rows(RuntimeOperation, new_rows, key=["operation_id"])
    upsert_by_pk(RuntimeOperation, ops.updated_rows, keep=["first_seen_at"])
    for op in new_rows:
        batch.count_row_created(COUNTERS, op)
    for i in ops.updated_keys:
        batch.count_row_changed(COUNTERS, counted_before[i], ops.current[i])
    # Events that arrived before their operation: link them now.
    link_orphans(
        RuntimeOperationEvent,
        fk="operation",
        by="operation_id_raw",
        parents={op.operation_id: op.pk for op in new_rows},
    )


def write_events(batch: Batch, items: Sequence[tuple[int, EventSnapshot]]) -> None:
    """Operation events in record order; run after ``write_operations`` so they find theirs."""
    if not items:
        return
    keys = sorted({(s.operation_id, s.event_id) for _, s in items})
    stored: dict[tuple[str, Decimal], RuntimeOperationEvent] = {
        (e.operation_id_raw, e.event_id): e
        for e in RuntimeOperationEvent.objects.filter(
            in_keys(RuntimeOperationEvent, ["operation_id_raw", "event_id"], keys)
        )
    }
    events = batch.decide_in_order(
        items,
        stored,
        key=lambda s: (s.operation_id, s.event_id),
        decide=decide_event,
        create=lambda index, s: new_event(s, None),
        update=_immutable,
        label=lambda s: s.label,
    )
    new_rows = events.new_rows
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


def _immutable(index: int, event: RuntimeOperationEvent, snapshot: EventSnapshot) -> None:
    raise AssertionError("decide_event never answers UPDATED: events are immutable")
