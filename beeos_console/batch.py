"""The set-based ingest path: one call's records written with a few statements.

The one-record services (``tasks.services``, ``operations.services``) cost
about six round trips a record; a feeder pushing 500 records would wait on
3,000 of them. A batch instead, per kind:

1. loads the stored rows of every key in the call with one
   ``SELECT … ORDER BY key FOR UPDATE`` (sorted: two feeders never deadlock);
2. decides every record in order, in memory, with the *same* pure functions
   the one-record path uses (``decide_task``, ``apply_task``, …), so a key
   seen twice in one call ends as it would record by record;
3. writes with one ``INSERT`` for new rows and one upsert for changed rows,
   then the summed counter deltas and the audit entries, each in one statement.

The caller runs a batch inside one transaction and, if any statement fails
(a feeder racing on a new key, say), rolls it back and replays the records
through the one-record path, so every record is still written whole or not at
all and the answers are the same.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

from django.db import models

from . import audit, counters
from .audit import Actor
from .mirror import IngestResult

CounterKey = tuple[str, str, dt.datetime]


class Batch:
    """What one batch collects beside its rows: answers, counter deltas, audit entries."""

    def __init__(self, actor: Actor) -> None:
        self.actor = actor
        self.results: dict[int, IngestResult] = {}
        self.deltas: Counter[CounterKey] = Counter()
        self._audit: list[tuple[int, int, dict[str, Any]]] = []

    def answer(self, index: int, result: IngestResult) -> None:
        self.results[index] = result

    def count_create(self, kind: str, status: str, created_at: dt.datetime | None) -> None:
        self.deltas[(kind, status, counters.hour_of(created_at))] += 1

    def count_change(
        self,
        kind: str,
        old: tuple[str, dt.datetime | None],
        new: tuple[str, dt.datetime | None],
    ) -> None:
        self.deltas[(kind, old[0], counters.hour_of(old[1]))] -= 1
        self.deltas[(kind, new[0], counters.hour_of(new[1]))] += 1

    def audit_change(self, index: int, change: dict[str, Any] | None) -> None:
        """Keep a state change's audit entry; entries are written in record order."""
        if change is not None:
            self._audit.append((index, len(self._audit), change))

    def flush(self) -> None:
        """Counters and audit entries, one statement each."""
        counters.bump_many(self.deltas)
        self.deltas.clear()
        entries = [audit.entry(self.actor, **change) for _, _, change in sorted(self._audit)]
        if entries:
            audit.AuditEntry.objects.bulk_create(entries)
        self._audit.clear()


def upsert_by_pk(
    model: type[models.Model], objs: Sequence[models.Model], *, keep: Iterable[str] = ()
) -> None:
    """Write changed, already-locked rows back in one ``INSERT … ON CONFLICT (id) DO UPDATE``.

    ``keep``: columns never overwritten (first-seen stamps).
    """
    if not objs:
        return
    kept = set(keep)
    fields = [
        f.name for f in model._meta.concrete_fields if not f.primary_key and f.name not in kept
    ]
    model._default_manager.bulk_create(
        objs, update_conflicts=True, unique_fields=["pk"], update_fields=fields
    )
