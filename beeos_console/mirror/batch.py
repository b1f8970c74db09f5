"""The set-based ingest path: one call's records written with a few statements.

The one-record write paths (``tasks.services.write``, ``operations.services.write``) cost
about six round trips a record; a feeder pushing 500 records would wait on
3,000 of them. A batch instead, per kind:

1. loads the stored rows of every key in the call with one
   ``SELECT … ORDER BY key FOR UPDATE`` (sorted: two feeders never deadlock);
2. decides every record in order, in memory, with the *same* pure functions
   the one-record path uses (each app's ``services.rules``), so a key
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
import json
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Generic, TypeVar

from django.db import connection, models
from django.db.models import Q, QuerySet
from django.db.models.expressions import RawSQL

from beeos_console.auditlog import services as auditlog
from beeos_console.auditlog.models import AuditEntry
from beeos_console.auditlog.services import Actor
from beeos_console.mirror import agent_counters, counters, registry
from beeos_console.mirror.edge import IngestResult, Outcome

K = TypeVar("K")
S = TypeVar("S")
R = TypeVar("R", bound=models.Model)


@dataclass
class Decisions(Generic[K, R]):
    """Where one kind's records left its rows: stored (locked), then changed in memory."""

    stored: dict[K, R]
    current: dict[K, R]
    created: list[K] = field(default_factory=list)
    changed: set[K] = field(default_factory=set)

    @property
    def new_rows(self) -> list[R]:
        return [self.current[k] for k in self.created]

    @property
    def updated_keys(self) -> list[K]:
        """Stored rows some record changed (a key created in this batch is a new row)."""
        return sorted(self.changed & self.stored.keys())  # type: ignore[type-var]

    @property
    def updated_rows(self) -> list[R]:
        return [self.current[k] for k in self.updated_keys]


class Batch:
    """What one batch collects beside its rows: answers, counter deltas, audit entries."""

    def __init__(self, actor: Actor) -> None:
        self.actor = actor
        self.results: dict[int, IngestResult] = {}
        self.deltas: Counter[counters.CounterKey] = Counter()
        self.agents = agent_counters.AgentTally()  # per-agent counters of task writes
        self._audit: list[tuple[int, int, dict[str, Any]]] = []

    def answer(self, index: int, result: IngestResult) -> None:
        self.results[index] = result

    def decide_in_order(
        self,
        items: Sequence[tuple[int, S]],
        stored: dict[K, R],
        *,
        key: Callable[[S], K],
        decide: Callable[[S, R | None], tuple[Outcome, str]],
        create: Callable[[int, S], R],
        update: Callable[[int, R, S], None],
        label: Callable[[S], str],
    ) -> Decisions[K, R]:
        """Each record against what the records before it left, as one by one would.

        ``decide`` is the kind's pure storage rule; ``create`` makes the new row
        and ``update`` applies a newer snapshot to the row, both in memory.
        """
        decisions = Decisions(stored, dict(stored))
        for index, snapshot in items:
            k = key(snapshot)
            obj = decisions.current.get(k)
            outcome, note = decide(snapshot, obj)
            if outcome == Outcome.CREATED:
                obj = decisions.current[k] = create(index, snapshot)
                decisions.created.append(k)
            elif outcome == Outcome.UPDATED:
                update(index, obj, snapshot)
                decisions.changed.add(k)
            self.answer(index, IngestResult(outcome, label(snapshot), obj, note))
        return decisions

    def count_row_created(self, counted: counters.Counted, row: Any) -> None:
        """A new row under each of its kind's counters (``counters.keys_of``)."""
        self.deltas.update(counters.keys_of(counted, row))

    def count_row_changed(
        self, counted: counters.Counted, before: Sequence[counters.CounterKey], row: Any
    ) -> None:
        """A changed row (``before``: its ``counters.keys_of`` when read) moves, if it did."""
        self.deltas.update(counters.moved(before, counters.keys_of(counted, row)))

    def audit_change(self, index: int, change: dict[str, Any] | None) -> None:
        """Keep a state change's audit entry; entries are written in record order."""
        if change is not None:
            self._audit.append((index, len(self._audit), change))

    def flush(self) -> None:
        """Counters (status, per agent) and audit entries, one statement each."""
        counters.bump_many(self.deltas)
        self.deltas.clear()
        self.agents.flush()
        entries = [auditlog.entry(self.actor, **change) for _, _, change in sorted(self._audit)]
        write_rows(AuditEntry, entries)
        self._audit.clear()


def write_batch(valid: dict[str, list[tuple[int, Any]]], actor: Actor) -> dict[int, IngestResult]:
    """Write validated snapshots set-based; call inside a transaction.

    Tasks before messages and operations before events, so children find their
    parent whichever came first in the call (the one-record path re-files them
    when the parent arrives: the stored result is the same).
    """
    batch = Batch(actor)
    groups: dict[str, tuple[int, Any, list[tuple[int, Any]]]] = {}
    for name, items in valid.items():
        record = registry.record_kinds()[name]
        order, write_many, gathered = groups.setdefault(
            record.group, (record.order, record.write_many, [])
        )
        gathered.extend(items)
    for _order, write_many, items in sorted(groups.values(), key=lambda group: group[0]):
        # In record order within a group: later snapshots of one object win.
        write_many(batch, sorted(items, key=lambda item: item[0]))
    batch.flush()
    return batch.results


def in_keys(model: type[models.Model], key: Sequence[str], values: Iterable[tuple]) -> Q:
    """``(key…) IN values`` as one subquery over arrays (a row-value ``IN`` of a few
    hundred tuples costs Django ~10 ms to compile; this costs nothing)."""
    columns = [model._meta.get_field(k) for k in key]
    arrays = [list(column) for column in zip(*values, strict=True)] or [[] for _ in key]
    table = connection.ops.quote_name(model._meta.db_table)
    names = ", ".join(connection.ops.quote_name(c.column) for c in columns)
    unnest = ", ".join(f"%s::{_cast_type(c)}[]" for c in columns)
    return Q(
        pk__in=RawSQL(
            f"SELECT id FROM {table} WHERE ({names}) IN (SELECT * FROM unnest({unnest}))",
            arrays,
        )
    )


def lock_by_key(queryset: QuerySet[R], key: Sequence[str]) -> dict[Any, R]:
    """The stored rows of ``queryset``, locked ``FOR UPDATE`` in key order, by key.

    Sorted locking: two feeders whose batches share keys never deadlock.
    A one-field key maps its value; a longer key maps the tuple.
    """
    rows = queryset.select_for_update().order_by(*key)
    if len(key) == 1:
        return {getattr(row, key[0]): row for row in rows}
    return {tuple(getattr(row, k) for k in key): row for row in rows}


def link_orphans(model: type[models.Model], *, fk: str, by: str, parents: dict[str, int]) -> None:
    """Rows that arrived before their parent: set foreign key ``fk`` where it is still
    empty and column ``by`` names a new parent (``parents``: that value -> parent pk)."""
    if not parents:
        return
    table = connection.ops.quote_name(model._meta.db_table)
    fk_column = connection.ops.quote_name(model._meta.get_field(fk).column)
    by_column = connection.ops.quote_name(model._meta.get_field(by).column)
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {table} AS child SET {fk_column} = v.parent_pk "
            "FROM unnest(%s::text[], %s::bigint[]) AS v(parent_key, parent_pk) "
            f"WHERE child.{fk_column} IS NULL AND child.{by_column} = v.parent_key",
            [list(parents), list(parents.values())],
        )


def write_rows(
    model: type[models.Model],
    objs: Sequence[models.Model],
    *,
    with_pk: bool = False,
    conflict: Sequence[str] = (),
    update: Sequence[str] = (),
    returning: Sequence[str] = (),
) -> list[tuple[Any, ...]]:
    """Insert (or upsert) ``objs`` with one statement whose rows travel as one jsonb array.

    Why not ``bulk_create``: on PostgreSQL it sends one array per column, and
    psycopg escapes every JSON value of a jsonb array element by element with
    a regular expression: on rows carrying raw payloads that costs three to
    four times the statement itself. Here ``json.dumps`` (C) encodes the rows
    once and the server unpacks them: ``r->>'col'`` cast to the column's base
    type, ``r->'col'`` for jsonb; a Python ``None`` is left out, so it is SQL
    NULL, as Django stores it.

    ``conflict``/``update``: ``ON CONFLICT (conflict) DO UPDATE SET update``.
    ``returning``: columns to return, one tuple per written row.
    Values come from each field's ``pre_save`` (so ``auto_now`` stamps apply).
    """
    if not objs:
        return []
    fields = [f for f in model._meta.concrete_fields if with_pk or not f.primary_key]
    columns, selects = [], []
    for f in fields:
        column = connection.ops.quote_name(f.column)
        columns.append(column)
        if f.get_internal_type() == "JSONField":
            selects.append(f"r->'{f.column}'")
        else:
            selects.append(f"(r->>'{f.column}')::{_cast_type(f)}")
    rows = []
    for obj in objs:
        row = {}
        for f in fields:
            value = f.pre_save(obj, add=True)
            if value is not None:
                row[f.column] = value
        rows.append(row)
    table = connection.ops.quote_name(model._meta.db_table)
    sql = (
        f"INSERT INTO {table} ({', '.join(columns)}) SELECT {', '.join(selects)} "
        "FROM jsonb_array_elements(%s::jsonb) WITH ORDINALITY AS batch(r, n) ORDER BY n"
    )
    if conflict:
        targets = ", ".join(
            connection.ops.quote_name(model._meta.get_field(c).column) for c in conflict
        )
        sets = ", ".join(
            f"{q} = EXCLUDED.{q}"
            for q in (connection.ops.quote_name(model._meta.get_field(u).column) for u in update)
        )
        sql += f" ON CONFLICT ({targets}) DO UPDATE SET {sets}"
    if returning:
        sql += " RETURNING " + ", ".join(connection.ops.quote_name(c) for c in returning)
    with connection.cursor() as cursor:
        cursor.execute(sql, [json.dumps(rows, default=_wire_value)])
        return cursor.fetchall() if returning else []


def _cast_type(f: models.Field) -> str:
    """The column's type without its modifiers (``varchar``, not ``varchar(256)``):
    a cast to the bare type never truncates; the column itself still checks."""
    return (f.target_field if f.is_relation else f).db_type(connection).split("(")[0]


def _wire_value(value: Any) -> Any:
    if isinstance(value, dt.datetime):
        return value.isoformat()
    if isinstance(value, Decimal):
        return str(value)
    raise TypeError(f"cannot send {type(value).__name__} in a batch row")


def insert_rows(
    model: type[models.Model], objs: Sequence[models.Model], *, key: Sequence[str] = ()
) -> None:
    """Insert new rows; with ``key`` (their natural key), set each object's primary key.

    A row another writer inserted meanwhile fails the statement (unique index):
    the caller's batch then falls back to the one-record path.
    """
    returned = write_rows(model, objs, returning=["id", *key] if key else ())
    if key:
        pk_of = {tuple(row[1:]): row[0] for row in returned}
        attnames = [model._meta.get_field(k).attname for k in key]
        for obj in objs:
            obj.pk = pk_of[tuple(getattr(obj, a) for a in attnames)]
            obj._state.adding = False


def upsert_by_pk(
    model: type[models.Model], objs: Sequence[models.Model], *, keep: Iterable[str] = ()
) -> None:
    """Write changed, already-locked rows back in one ``INSERT … ON CONFLICT (id) DO UPDATE``.

    ``keep``: columns never overwritten (first-seen stamps).
    """
    kept = set(keep)
    update = [
        f.name for f in model._meta.concrete_fields if not f.primary_key and f.name not in kept
    ]
    write_rows(model, objs, with_pk=True, conflict=["id"], update=update)
