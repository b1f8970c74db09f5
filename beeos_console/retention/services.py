"""Pruning: old terminal tasks and operations leave the mirror, in small transactions.

A row goes when its stored product status is terminal, today's state rules
agree, its last update (upstream ``updated_at`` and our ``mirrored_at``, or
``mirrored_at`` alone when the upstream never stamped it) is older than the
cutoff, and nothing still refers to it (``kinds.KEEP_REASONS``). Candidates are
read newest-first along the ``updated_at`` index, a keyset page at a time; each
page is one short transaction that locks its rows (``SKIP LOCKED``: a row a
writer holds is left for the next run), deletes them and their children,
decrements the maintained counters and writes one audit entry naming what it
removed. No table lock is ever taken. The audit log itself is never pruned; the
run ends with one audit entry of its totals.
"""

from __future__ import annotations

import datetime as dt
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone

from beeos_console.auditlog import services as auditlog
from beeos_console.auditlog.services import Actor
from beeos_console.cancels.models import BulkCancel, CancelRequest
from beeos_console.mirror import agent_counters, counters
from beeos_console.mirror.states import TERMINAL_PRODUCT_STATUSES
from beeos_console.retention.kinds import (
    BULK_JOB,
    CHANGED,
    KINDS,
    OPEN_CANCEL,
    REMOVED_LABELS,
    PrunableKind,
)

DEFAULT_BATCH = 500
MAX_BATCH = 10_000
AUDIT_KIND = "retention"
# Later than any real id: where the keyset over rows without updated_at starts.
_NO_ID_YET = 2**62


@dataclass
class PruneReport:
    cutoff: dt.datetime
    dry_run: bool
    batch_size: int
    removed: Counter[str] = field(default_factory=Counter)  # "tasks", "messages", …
    kept: Counter[str] = field(default_factory=Counter)  # "tasks: open_cancel", …
    batches: int = 0
    longest_batch: float = 0.0  # seconds: the longest single transaction
    seconds: float = 0.0

    def as_detail(self) -> dict[str, Any]:
        return {
            "cutoff": self.cutoff.isoformat(),
            "dry_run": self.dry_run,
            "batch_size": self.batch_size,
            "removed": {label: self.removed[label] for label in REMOVED_LABELS},
            "kept": dict(self.kept),
            "batches": self.batches,
            "longest_batch_ms": round(self.longest_batch * 1000, 1),
            "seconds": round(self.seconds, 2),
        }


def prune(
    *,
    older_than: dt.timedelta,
    actor: Actor,
    dry_run: bool = False,
    batch_size: int = DEFAULT_BATCH,
    progress: Callable[[PruneReport], None] | None = None,
) -> PruneReport:
    """Remove (or, ``dry_run``, count) what is older than ``now - older_than``."""
    if not 1 <= batch_size <= MAX_BATCH:
        raise ValueError(f"batch size must be 1-{MAX_BATCH:,}")
    started = time.perf_counter()
    report = PruneReport(timezone.now() - older_than, dry_run, batch_size)
    run_id = f"prune {timezone.now().isoformat()}"
    for kind in KINDS:
        for pks in _pages(kind, report.cutoff, batch_size):
            began = time.perf_counter()
            if dry_run:
                _count_page(kind, pks, report)
            else:
                with transaction.atomic():
                    _prune_page(kind, pks, report, actor, run_id)
            report.batches += 1
            report.longest_batch = max(report.longest_batch, time.perf_counter() - began)
            if progress:
                progress(report)
    report.seconds = time.perf_counter() - started
    if not dry_run:
        auditlog.record(
            actor,
            "retention.prune",
            AUDIT_KIND,
            run_id,
            reason=f"older than {older_than}",
            detail=report.as_detail(),
        )
    return report


def _old_enough(cutoff: dt.datetime) -> Q:
    return Q(mirrored_at__lt=cutoff) & (Q(updated_at__lt=cutoff) | Q(updated_at__isnull=True))


def _pages(kind: PrunableKind, cutoff: dt.datetime, size: int) -> Iterator[list[int]]:
    """Candidate primary keys, ``size`` at a time, newest last update first.

    Keyset pages along ``(updated_at DESC, id DESC)`` (every kind has that index),
    then the rows the upstream never stamped, by id: a kept row is passed once,
    a pruned one is never read again.
    """
    table = connection.ops.quote_name(kind.mirrored.model._meta.db_table)
    terminal = sorted(TERMINAL_PRODUCT_STATUSES)
    stamped = (
        f"SELECT id, updated_at FROM {table} WHERE updated_at < %s "
        f"AND (updated_at, id) < (%s, %s) AND status = ANY(%s) AND mirrored_at < %s "
        f"ORDER BY updated_at DESC, id DESC LIMIT %s"
    )
    at, last = cutoff, 0
    while True:
        with connection.cursor() as cursor:
            cursor.execute(stamped, [cutoff, at, last, terminal, cutoff, size])
            rows = cursor.fetchall()
        if not rows:
            break
        yield [pk for pk, _at in rows]
        last, at = rows[-1]
    unstamped = (
        f"SELECT id FROM {table} WHERE updated_at IS NULL AND id < %s "
        f"AND status = ANY(%s) AND mirrored_at < %s ORDER BY id DESC LIMIT %s"
    )
    last = _NO_ID_YET
    while True:
        with connection.cursor() as cursor:
            cursor.execute(unstamped, [last, terminal, cutoff, size])
            pks = [pk for (pk,) in cursor.fetchall()]
        if not pks:
            return
        yield pks
        last = pks[-1]


def _candidates(kind: PrunableKind, pks: list[int], cutoff: dt.datetime, *, lock: bool) -> Any:
    """The page's rows that still qualify (locked, skipping rows a writer holds)."""
    model = kind.mirrored.model
    rows = model.objects.filter(pk__in=pks, status__in=TERMINAL_PRODUCT_STATUSES)
    if lock:
        rows = rows.select_for_update(skip_locked=True, of=("self",))
    return list(rows.filter(_old_enough(cutoff)).order_by("pk").values(*kind.read_fields()))


def _referenced(kind: PrunableKind, rows: list[dict[str, Any]]) -> dict[tuple[str, str], str]:
    """(protocol, id) of the rows an open cancel or a live bulk cancel refers to."""
    ids = [kind.reference(row)[1] for row in rows]
    found: dict[tuple[str, str], str] = {}
    open_cancels = CancelRequest.objects.filter(object_kind=kind.name, object_id__in=ids).filter(
        Q(state=CancelRequest.State.OPEN) | CancelRequest.OPEN_UNCERTAIN
    )
    for protocol, object_id in open_cancels.values_list("protocol", "object_id"):
        found[(protocol, object_id)] = OPEN_CANCEL
    live = BulkCancel.objects.filter(
        object_kind=kind.name, state__in=(BulkCancel.State.QUEUED, BulkCancel.State.RUNNING)
    )
    wanted = {kind.reference(row) for row in rows}
    for items in live.values_list("items", flat=True):
        for protocol, object_id in items or []:
            if (protocol, object_id) in wanted:
                found.setdefault((protocol, object_id), BULK_JOB)
    return found


def _sort(
    kind: PrunableKind, rows: list[dict[str, Any]], report: PruneReport
) -> list[dict[str, Any]]:
    """The rows to remove; the others are counted under why they stay."""
    referenced = _referenced(kind, rows) if rows else {}
    going = []
    for row in rows:
        reason = kind.keep_reason(row) or referenced.get(kind.reference(row))
        if reason:
            report.kept[f"{kind.label}: {reason}"] += 1
        else:
            going.append(row)
    return going


def _count_page(kind: PrunableKind, pks: list[int], report: PruneReport) -> None:
    """Dry run: what this page would remove, read without a lock, nothing written."""
    going = _sort(kind, _candidates(kind, pks, report.cutoff, lock=False), report)
    if not going:
        return
    ids = [row[kind.mirrored.id_field] for row in going]
    gone = [row["id"] for row in going]
    report.removed[kind.label] += len(going)
    for child in kind.children:
        report.removed[child.label] += child.rows(gone, ids).count()


def _prune_page(
    kind: PrunableKind, pks: list[int], report: PruneReport, actor: Actor, run_id: str
) -> None:
    """One transaction: lock, re-check, delete children and rows, counters, one audit entry."""
    rows = _candidates(kind, pks, report.cutoff, lock=True)
    if len(rows) < len(pks):
        report.kept[f"{kind.label}: {CHANGED}"] += len(pks) - len(rows)
    going = _sort(kind, rows, report)
    if not going:
        return
    mirrored = kind.mirrored
    gone = [row["id"] for row in going]
    ids = [row[mirrored.id_field] for row in going]
    removed: Counter[str] = Counter()
    for child in kind.children:
        removed[child.label] += child.rows(gone, ids).delete()[0]
    # Django's collector still handles any relation to the row; it reads only the ids.
    _total, per_model = mirrored.model.objects.filter(pk__in=gone).only("pk").delete()
    removed[kind.label] += per_model.get(mirrored.model._meta.label, 0)
    counters.on_rows_deleted(mirrored.counters, going)
    if mirrored.agent_counted:
        tally = agent_counters.AgentTally()
        for row in going:
            tally.deleted(agent_counters.state_of_values(row))
        tally.flush()
    auditlog.record(
        actor,
        "retention.pruned",
        AUDIT_KIND,
        run_id,
        detail={
            "kind": kind.name,
            "cutoff": report.cutoff.isoformat(),
            "removed": dict(removed),
            # protocol:id for tasks (two protocols may share an id), the id elsewhere.
            "ids": [":".join(filter(None, kind.reference(row))) for row in going],
        },
    )
    report.removed.update(removed)
