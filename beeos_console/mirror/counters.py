"""Maintained status counters (see ``StatusCount``): cheap counts for every page.

Each mirrored row is counted once under (kind, display status, hour of its
upstream ``created_at``). Services call ``on_create`` / ``on_change`` inside
the transaction that writes the row, so counts and rows commit together.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Mapping

from django.db import connection, transaction
from django.db.models import Count, Sum
from django.db.models.functions import TruncHour

from beeos_console.mirror.models import StatusCount

TASK = "task"
OPERATION = "operation"
# Operations by raw status too: the dashboard's "needs attention" chart.
OPERATION_RAW = "operation_raw"

CounterKey = tuple[str, str, dt.datetime]  # (kind, status, hour)


def hour_of(value: dt.datetime | None) -> dt.datetime:
    value = value or dt.datetime.now(dt.UTC)
    return value.astimezone(dt.UTC).replace(minute=0, second=0, microsecond=0)


def bump(kind: str, status: str, hour: dt.datetime, delta: int) -> None:
    """Add ``delta`` to one counter with a single upsert (no read-modify-write race)."""
    table = StatusCount._meta.db_table
    sql = (
        f"INSERT INTO {table} (kind, status, hour, count) VALUES (%s, %s, %s, %s) "
        f"ON CONFLICT (kind, status, hour) DO UPDATE SET count = {table}.count + EXCLUDED.count"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [kind, status, hour, delta])


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


def change_deltas(
    kind: str,
    old: tuple[str, dt.datetime | None],
    new: tuple[str, dt.datetime | None],
) -> dict[CounterKey, int]:
    """Moving one row from (old status, created_at) to (new …); empty if it did not move."""
    old_key, new_key = key_of(kind, *old), key_of(kind, *new)
    return {} if old_key == new_key else {old_key: -1, new_key: 1}


def on_create(kind: str, status: str, created_at: dt.datetime | None) -> None:
    bump(*key_of(kind, status, created_at), 1)


def on_change(
    kind: str,
    old: tuple[str, dt.datetime | None],
    new: tuple[str, dt.datetime | None],
) -> None:
    """Move one row from (old status, old hour) to (new status, new hour) if it moved."""
    bump_many(change_deltas(kind, old, new))  # one round trip, none if it did not move


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
def rebuild(kind: str, model: type, status_field: str = "status") -> int:
    """Recompute one kind's counters from its table (a full scan: maintenance only)."""
    StatusCount.objects.filter(kind=kind).delete()
    rows = (
        model.objects.annotate(bucket=TruncHour("created_at", tzinfo=dt.UTC))
        .values(status_field, "bucket")
        .annotate(n=Count("id"))
        .order_by()
    )
    merged: dict[tuple[str, dt.datetime], int] = defaultdict(int)
    for r in rows:
        merged[(r[status_field][:32], hour_of(r["bucket"]))] += r["n"]
    created = [
        StatusCount(kind=kind, status=status, hour=hour, count=n)
        for (status, hour), n in merged.items()
    ]
    StatusCount.objects.bulk_create(created)
    return len(created)
