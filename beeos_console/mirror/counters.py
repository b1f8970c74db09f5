"""Maintained status counters (see ``StatusCount``): cheap counts for every page.

Each mirrored row is counted once per counter of its kind under (counter, counted
value, hour of its upstream ``created_at``). A kind declares its counters in the
registry (``MirroredKind.counters``: counter -> column, or a tuple of columns whose
values are joined by ":", e.g. tasks by protocol: "a2a:processing");
``counted_value`` is the one rule for the value. Services call ``on_row_created`` /
``on_row_changed`` (one row) or ``Batch.count_row_*`` (many) inside the transaction
that writes the row, so counts and rows commit together; re-projection, prune and
``rebuild_counters`` read the same declaration.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from django.db import connection, transaction
from django.db.models import Count, Sum
from django.db.models.functions import TruncHour

from beeos_console.mirror.models import StatusCount

TASK = "task"
# Tasks by protocol and display status: the value is "<protocol>:<status>".
TASK_PROTOCOL = "task_protocol"
OPERATION = "operation"
# Operations by raw status too: the dashboard's "needs attention" chart.
OPERATION_RAW = "operation_raw"

CounterKey = tuple[str, str, dt.datetime]  # (kind, status, hour)
# What a counter counts: one column, or several whose values are joined by ":".
Columns = str | tuple[str, ...]
# A kind's counters: counter name -> counted column(s) (``MirroredKind.counters``).
Counted = Mapping[str, Columns]
VALUE_MAX = StatusCount._meta.get_field("status").max_length  # 32


def hour_of(value: dt.datetime | None) -> dt.datetime:
    value = value or dt.datetime.now(dt.UTC)
    return value.astimezone(dt.UTC).replace(minute=0, second=0, microsecond=0)


def bump_many(deltas: Mapping[CounterKey, int]) -> None:
    """Add many summed deltas in one upsert, in key order (no deadlock between writers)."""
    rows = sorted((key, delta) for key, delta in deltas.items() if delta)
    if not rows:
        return
    table = StatusCount._meta.db_table
    values = ", ".join(["(%s, %s, %s, %s)"] * len(rows))
    sql = (
        f"INSERT INTO {table} (kind, status, hour, count) VALUES {values} "
        f"ON CONFLICT (kind, status, hour) DO UPDATE SET count = {table}.count + EXCLUDED.count"
    )
    params = [
        value for (kind, status, hour), delta in rows for value in (kind, status, hour, delta)
    ]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)


def key_of(kind: str, status: str, created_at: dt.datetime | None) -> CounterKey:
    """The counter a row is counted under."""
    return (kind, status, hour_of(created_at))


def columns_of(columns: Columns) -> tuple[str, ...]:
    return (columns,) if isinstance(columns, str) else tuple(columns)


def counted_value(row: Any, columns: Columns) -> str:
    """The value ``row`` is counted under: its column's value, or its columns' values
    joined by ":" ("a2a:processing"), cut to the counter's 32 characters.

    ``row``: a model instance, or a dict read with ``.values()``.
    """
    if isinstance(row, Mapping):
        values = [row[column] for column in columns_of(columns)]
    else:
        values = [getattr(row, column) for column in columns_of(columns)]
    return ":".join(str(value) for value in values)[:VALUE_MAX]


def split_value(value: str) -> list[str]:
    """A tuple counter's value back into its columns' values (``counted_value``'s join)."""
    return value.split(":")


def keys_of(counted: Counted, row: Any) -> list[CounterKey]:
    """Every counter ``row`` is counted under: one per counter of its kind, in order."""
    created_at = row["created_at"] if isinstance(row, Mapping) else row.created_at
    return [
        key_of(kind, counted_value(row, columns), created_at) for kind, columns in counted.items()
    ]


def moved(before: Sequence[CounterKey], after: Sequence[CounterKey]) -> Counter[CounterKey]:
    """One row's deltas from its counters ``before`` to ``after`` (``keys_of``, same kind);
    empty if it did not move."""
    deltas: Counter[CounterKey] = Counter()
    for old, new in zip(before, after, strict=True):
        if old != new:
            deltas[old] -= 1
            deltas[new] += 1
    return deltas


def on_row_created(counted: Counted, row: Any) -> None:
    """Count a new row under each of its kind's counters: one statement."""
    bump_many(Counter(keys_of(counted, row)))


def on_row_changed(counted: Counted, before: Sequence[CounterKey], row: Any) -> None:
    """Move a changed row (``before``: its ``keys_of`` when read); none if it did not move."""
    bump_many(moved(before, keys_of(counted, row)))


def on_rows_deleted(counted: Counted, rows: Sequence[Any]) -> None:
    """Uncount deleted rows (instances or ``.values()`` dicts with the counted columns)."""
    deltas: Counter[CounterKey] = Counter()
    for row in rows:
        deltas.subtract(keys_of(counted, row))
    bump_many(deltas)


def totals(kind: str, since: dt.datetime | None = None) -> dict[str, int]:
    qs = StatusCount.objects.filter(kind=kind)
    if since is not None:
        qs = qs.filter(hour__gte=hour_of(since))
    rows = qs.values("status").annotate(n=Sum("count")).order_by()
    return {row["status"]: row["n"] for row in rows if row["n"]}


def hourly(kind: str, since: dt.datetime) -> dict[dt.datetime, dict[str, int]]:
    """Counts per hour bucket (newer than ``since``) and status."""
    series: dict[dt.datetime, dict[str, int]] = defaultdict(dict)
    rows = StatusCount.objects.filter(kind=kind, hour__gte=hour_of(since)).values_list(
        "hour", "status", "count"
    )
    for hour, status, count in rows:
        if count:
            series[hour][status] = count
    return dict(series)


@transaction.atomic
def rebuild(kind: str, model: type, columns: Columns = "status") -> int:
    """Recompute one counter from its table (a full scan: maintenance only)."""
    StatusCount.objects.filter(kind=kind).delete()
    rows = (
        model.objects.annotate(bucket=TruncHour("created_at", tzinfo=dt.UTC))
        .values(*columns_of(columns), "bucket")
        .annotate(n=Count("id"))
        .order_by()
    )
    merged: dict[tuple[str, dt.datetime], int] = defaultdict(int)
    for r in rows:
        merged[(counted_value(r, columns), hour_of(r["bucket"]))] += r["n"]
    created = [
        StatusCount(kind=kind, status=status, hour=hour, count=n)
        for (status, hour), n in merged.items()
    ]
    StatusCount.objects.bulk_create(created)
    return len(created)
