"""The projection audit's set-based reads: only the rows that may hold a finding.

A row's expected projection is a pure function of a few raw columns (a task's
protocol, raw state and product failure details; a message's state and stop
reason; an operation's status, effectStates, projection state, error code and
retryMode). There are a few dozen distinct tuples among millions of rows, so
the sweep

1. collects the raw tuples of each kind into a temporary *key table*: for
   tasks and messages every combination of the distinct values of each key
   column, each found by a skip scan of that column's index (a few index
   probes per distinct value, never a table scan); for operations (200,000
   rows at a million tasks, one column without an index) ``SELECT DISTINCT``;
2. has the audit's rules (``audit.py``) project each tuple once, in Python, and
   writes the expected projection and what the tuple alone tells (unmapped,
   producer note, terminal, …) beside it;
3. reads each kind in primary-key ranges joined to its key table, returning
   only the rows whose stored projection differs, whose tuple is flagged, or
   whose own columns break an invariant (a future stamp, a stale
   ``projection_pending``, a terminal flag), in primary-key order: the audit
   runs its per-row checks on exactly those;
4. decides the evidence rule for the terminal tasks of a range in one
   aggregate over their messages (the deciding agent reply per task), returning
   only the tasks it may fault.

A task key is (protocol, raw state): a product row whose payload carries
failure details comes back whole and is projected with them in Python. A row
whose tuple is not in the key table (written after step 1) comes back too,
flagged ``unknown``: the audit then judges it the per-row way. Nothing here
knows the rules; ``audit.py`` does.
"""

from __future__ import annotations

import datetime as dt
import queue
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

from django.db import connection
from django.db.models import Model

from beeos_console.core.sql import skip_scan_sql
from operations.models import RuntimeOperation
from tasks import states as task_states
from tasks.models import Message, Task

# Key tuples projected per round trip when filling a key table.
KEY_BATCH = 2000
# What every key table stores beside its key: the expected projection.
PROJECTION_COLUMNS = ("status", "reason", "outcome_certainty", "retry_policy", "projection_rule")


def _table(model: type[Model]) -> str:
    return f'"{model._meta.db_table}"'


@dataclass(frozen=True)
class KeyTable:
    """One kind's distinct raw tuples and what today's rules make of each."""

    name: str
    model: type[Model]
    key_columns: tuple[str, ...]
    # What the rules tell of a tuple beside its projection: (column, SQL type).
    flag_columns: tuple[tuple[str, str], ...]
    # Each key column has an index that leads with it: combine their distinct values
    # (a superset of the tuples that occur) instead of scanning the table.
    skip_scan: bool = True

    @property
    def value_columns(self) -> tuple[str, ...]:
        return (*PROJECTION_COLUMNS, *(name for name, _type in self.flag_columns))

    def create(self) -> None:
        columns = ", ".join(
            [
                "n serial PRIMARY KEY",
                *(f"{name} text NOT NULL" for name in self.key_columns),
                *(f"{name} text" for name in PROJECTION_COLUMNS),
                *(f"{name} {sql_type}" for name, sql_type in self.flag_columns),
            ]
        )
        with connection.cursor() as cursor:
            cursor.execute(f"DROP TABLE IF EXISTS {self.name}")
            cursor.execute(f"CREATE TEMP TABLE {self.name} ({columns})")

    def fill(self, project: Callable[[tuple[str, ...]], tuple[Any, ...]]) -> int:
        """Collect the raw tuples, then project each once (``project(key)``)."""
        keys = ", ".join(self.key_columns)
        table = _table(self.model)
        distinct = f"SELECT DISTINCT {keys} FROM {table}"
        if self.skip_scan:
            values = [
                f"(SELECT x FROM ({skip_scan_sql(table, column)}) AS s) AS c{n}({column})"
                for n, column in enumerate(self.key_columns)
            ]
            combined = f"SELECT {keys} FROM {' CROSS JOIN '.join(values)}"
            with connection.cursor() as cursor:
                cursor.execute(f"SELECT count(*) FROM ({combined}) AS k")
                if cursor.fetchone()[0] <= MAX_COMBINED_KEYS:
                    distinct = combined
        with connection.cursor() as cursor:
            cursor.execute(f"INSERT INTO {self.name} ({keys}) {distinct}")
            total = cursor.rowcount
        last = 0
        while True:
            with connection.cursor() as cursor:
                cursor.execute(
                    f"SELECT n, {keys} FROM {self.name} WHERE n > %s ORDER BY n LIMIT %s",
                    [last, KEY_BATCH],
                )
                rows = cursor.fetchall()
            if not rows:
                break
            last = rows[-1][0]
            self._store([(row[0], *project(tuple(row[1:]))) for row in rows])
        with connection.cursor() as cursor:
            cursor.execute(f"ANALYZE {self.name}")
        return total

    def _store(self, rows: Sequence[tuple[Any, ...]]) -> None:
        columns = self.value_columns
        width = len(columns) + 1
        casts = ["integer"] + ["text"] * len(PROJECTION_COLUMNS)
        casts += [sql_type for _name, sql_type in self.flag_columns]
        # The first VALUES row carries the casts, so every column gets its type.
        first = "(" + ", ".join(f"%s::{cast}" for cast in casts) + ")"
        rest = ", ".join(["(" + ", ".join(["%s"] * width) + ")"] * (len(rows) - 1))
        values = first + (", " + rest if rest else "")
        assignments = ", ".join(f"{name} = v.{name}" for name in columns)
        sql = (
            f"UPDATE {self.name} AS k SET {assignments} "
            f"FROM (VALUES {values}) AS v(n, {', '.join(columns)}) WHERE k.n = v.n"
        )
        with connection.cursor() as cursor:
            cursor.execute(sql, [value for row in rows for value in row])

    def drop(self) -> None:
        with connection.cursor() as cursor:
            cursor.execute(f"DROP TABLE IF EXISTS {self.name}")

    @property
    def all_columns(self) -> tuple[str, ...]:
        return ("n", *self.key_columns, *self.value_columns)

    def rows(self) -> list[tuple[Any, ...]]:
        """The filled table, to load into another session (``load``)."""
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT {', '.join(self.all_columns)} FROM {self.name} ORDER BY n")
            return cursor.fetchall()

    def load(self, rows: Sequence[tuple[Any, ...]]) -> None:
        """This session's copy of a table another session filled (same ``n``: joins use it)."""
        self.create()
        with (
            connection.cursor() as cursor,
            cursor.copy(f"COPY {self.name} ({', '.join(self.all_columns)}) FROM STDIN") as copy,
        ):
            for row in rows:
                copy.write_row(row)
        with connection.cursor() as cursor:
            cursor.execute(f"ANALYZE {self.name}")

    def join(self, row_columns: Sequence[str]) -> str:
        """``LEFT JOIN`` of this key table as ``k`` on the row's key expressions."""
        on = " AND ".join(
            f"k.{key} = {expr}" for key, expr in zip(self.key_columns, row_columns, strict=True)
        )
        return f"LEFT JOIN {self.name} k ON {on}"

    def differs(self, alias: str) -> str:
        """SQL: the row's stored projection is not the expected one."""
        stored = ", ".join(f"{alias}.{name}" for name in PROJECTION_COLUMNS)
        wanted = ", ".join(f"k.{name}" for name in PROJECTION_COLUMNS)
        return f"({stored}) IS DISTINCT FROM ({wanted})"


# Beyond this many combinations (a producer sending thousands of distinct values),
# the exact SELECT DISTINCT is cheaper than projecting the cross product.
MAX_COMBINED_KEYS = 20_000

TASK_KEYS = KeyTable(
    "audit_sweep_task_keys",
    Task,
    ("protocol", "raw_state"),
    (("flagged", "boolean"), ("terminal", "boolean")),
)
MESSAGE_KEYS = KeyTable(
    "audit_sweep_message_keys",
    Message,
    ("state", "stop_reason"),
    (("flagged", "boolean"), ("terminal", "boolean"), ("plain_completed", "boolean")),
)
OPERATION_KEY_COLUMNS = (
    "raw_status",
    "effect_state",
    "projection_state",
    "error_code",
    "error_retry_mode",
    "error_effect_state",
)
OPERATION_KEYS = KeyTable(
    "audit_sweep_operation_keys",
    RuntimeOperation,
    OPERATION_KEY_COLUMNS,
    (
        ("flagged", "boolean"),
        ("pending", "boolean"),
        ("known", "boolean"),
        ("our_terminal", "boolean"),
    ),
    skip_scan=False,
)
KEY_TABLES = (TASK_KEYS, MESSAGE_KEYS, OPERATION_KEYS)

# For the sweep's own session: its joins and sorts of one range fit in memory, and
# JIT compiling (over half a second per range query) costs more than it saves.
SESSION_SETTINGS = {"work_mem": "64MB", "jit": "off"}


def _configure_session() -> None:
    with connection.cursor() as cursor:
        for name, value in SESSION_SETTINGS.items():
            cursor.execute("SELECT set_config(%s, %s, false)", [name, value])


def _reset_session() -> None:
    for table in KEY_TABLES:
        table.drop()
    with connection.cursor() as cursor:
        for name in SESSION_SETTINGS:
            cursor.execute(f"RESET {name}")


@contextmanager
def key_tables() -> Iterator[None]:
    """The temporary key tables for one sweep (per connection; dropped afterwards).

    After an error they are left to the session (a broken transaction cannot
    drop them); the next sweep recreates them.
    """
    _configure_session()
    for table in KEY_TABLES:
        table.create()
    yield
    _reset_session()


T = TypeVar("T")
R = TypeVar("R")
# Ranges each reading session may be ahead of the one being judged: bounds memory.
AHEAD_PER_SESSION = 2


class Sessions:
    """Database sessions that read ranges side by side; results come back in order.

    With ``count`` 1 — or inside a transaction, whose rows other sessions cannot
    see (the test suite) — every read runs here, in this session. Otherwise
    ``count`` threads each open their own connection, load copies of the filled
    key tables and read ranges round-robin, at most ``AHEAD_PER_SESSION`` ahead
    of the caller, who judges the results in range order: the same findings in
    the same order, with the database's work on several cores.
    """

    def __init__(self, count: int) -> None:
        self.count = count if count > 1 and not connection.in_atomic_block else 1
        self._inboxes: list[queue.SimpleQueue] = []
        self._threads: list[threading.Thread] = []

    def __enter__(self) -> Sessions:
        if self.count > 1:
            tables = [(table, table.rows()) for table in KEY_TABLES]
            for number in range(self.count):
                inbox: queue.SimpleQueue = queue.SimpleQueue()
                thread = threading.Thread(
                    target=_serve, args=(inbox, tables), name=f"audit-sweep-{number}", daemon=True
                )
                thread.start()
                self._inboxes.append(inbox)
                self._threads.append(thread)
        return self

    def __exit__(self, *exc: object) -> None:
        for inbox in self._inboxes:
            inbox.put(None)
        for thread in self._threads:
            thread.join()

    def ordered(self, read: Callable[[T], R], items: Iterable[T]) -> Iterator[tuple[T, R]]:
        """``(item, read(item))`` for every item, in order (``read`` must only read)."""
        if self.count == 1:
            for item in items:
                yield item, read(item)
            return
        pending: deque[tuple[T, Future]] = deque()
        for number, item in enumerate(items):
            result: Future = Future()
            self._inboxes[number % self.count].put((read, item, result))
            pending.append((item, result))
            if len(pending) >= self.count * AHEAD_PER_SESSION:
                done, result = pending.popleft()
                yield done, result.result()
        while pending:
            done, result = pending.popleft()
            yield done, result.result()


def _serve(inbox: queue.SimpleQueue, tables: list[tuple[KeyTable, list[tuple]]]) -> None:
    """One reading session: its own connection and key tables, until told to stop."""
    try:
        _configure_session()
        for table, rows in tables:
            table.load(rows)
        while (job := inbox.get()) is not None:
            read, item, result = job
            if result.set_running_or_notify_cancel():
                try:
                    result.set_result(read(item))
                except Exception as exc:  # handed to the caller, raised there
                    result.set_exception(exc)
    except Exception as exc:
        # Setting up failed: every job sent here fails with it, none hangs.
        while (job := inbox.get()) is not None:
            job[2].set_exception(exc)
    finally:
        connection.close()


def next_range(model: type[Model], after: int, size: int) -> tuple[int, int] | None:
    """The next ``size`` rows by primary key after ``after``: (row count, last pk)."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT count(*), max(id) FROM (SELECT id FROM {_table(model)} "
            f"WHERE id > %s ORDER BY id LIMIT %s) AS r",
            [after, size],
        )
        count, last = cursor.fetchone()
    return (count, last) if count else None


def _dicts(sql: str, params: Sequence[Any]) -> list[dict[str, Any]]:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        names = [col.name for col in cursor.description]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


# --- tasks -----------------------------------------------------------------------------

TASK_ROW_COLUMNS = (
    "id",
    "task_id",
    "protocol",
    "raw_state",
    *PROJECTION_COLUMNS,
    "projection_version",
    "updated_at",
    "first_seen_at",
)


# A product producer's failure details (JSON text, '' when absent: JSON text is never
# empty). Only product rows' payloads are read, and only these keys.
TASK_DETAIL_KEYS = tuple(f"detail_{name}" for name in task_states.PRODUCER_DETAILS)
_DETAILS = ", ".join(
    f"CASE WHEN t.protocol = '{task_states.PRODUCT}' "
    f"THEN COALESCE((t.raw_payload -> '{name}')::text, '') ELSE '' END AS detail_{name}"
    for name in task_states.PRODUCER_DETAILS
)
_HAS_DETAILS = (
    f"CASE WHEN t.protocol = '{task_states.PRODUCT}' THEN t.raw_payload ?| ARRAY["
    + ", ".join(f"'{name}'" for name in task_states.PRODUCER_DETAILS)
    + "] ELSE false END"
)


def task_rows(lo: int, hi: int, version: int) -> list[dict[str, Any]]:
    """Tasks in (lo, hi] whose projection may hold a finding.

    Its stored projection differs from its tuple's, is of another version, its
    tuple is flagged or unknown, or it is a product row carrying failure details.
    """
    select = ", ".join(f"t.{c}" for c in TASK_ROW_COLUMNS)
    join = TASK_KEYS.join(["t.protocol", "t.raw_state"])
    sql = (
        f"SELECT {select}, {_DETAILS}, k.n IS NULL AS unknown "
        f"FROM {_table(Task)} t {join} "
        f"WHERE t.id > %s AND t.id <= %s AND (k.n IS NULL OR k.flagged "
        f"OR t.projection_version <> %s OR {TASK_KEYS.differs('t')} OR {_HAS_DETAILS}) "
        f"ORDER BY t.id"
    )
    return _dicts(sql, [lo, hi, version])


# The evidence rule per terminal task of a range, in one aggregate over its messages
# (no sort): whether it has envelopes / A2A history, whether an envelope's tuple is
# unknown, and its deciding reply, the latest terminal agent reply by (created_at,
# no created_at = now; id), whose key table row ``[3]`` tells what it says.
EVIDENCE_SQL = f"""
WITH evidence AS (
    SELECT m.task_id,
        bool_or(m.source = %(envelope)s) AS envelopes,
        bool_or(m.source <> %(envelope)s) AS history,
        bool_or(m.source = %(envelope)s AND k.n IS NULL) AS unknown,
        max(ARRAY[extract(epoch FROM COALESCE(m.created_at, %(now)s)), m.id, k.n])
            FILTER (WHERE m.source = %(envelope)s AND m.type = %(reply)s AND k.terminal)
            AS deciding
    FROM {_table(Message)} m
    LEFT JOIN {MESSAGE_KEYS.name} k ON k.state = m.state AND k.stop_reason = m.stop_reason
    WHERE m.task_id > %(lo)s AND m.task_id <= %(hi)s
    GROUP BY m.task_id
)
SELECT t.id, t.task_id, t.protocol, t.raw_state, t.status, t.updated_at, t.first_seen_at,
    s.status AS expected, s.n IS NULL AS unknown_task,
    COALESCE(e.envelopes, false) AS envelopes, COALESCE(e.history, false) AS history,
    COALESCE(e.unknown, false) AS unknown_message, e.deciding IS NOT NULL AS decided
FROM {_table(Task)} t
LEFT JOIN {TASK_KEYS.name} s ON s.protocol = t.protocol AND s.raw_state = t.raw_state
LEFT JOIN evidence e ON e.task_id = t.id
LEFT JOIN {MESSAGE_KEYS.name} says ON says.n = e.deciding[3]
WHERE t.id > %(lo)s AND t.id <= %(hi)s AND (s.n IS NULL OR s.terminal)
  AND (s.n IS NULL OR e.unknown OR CASE
        WHEN e.deciding IS NOT NULL THEN says.status <> s.status
        ELSE (e.envelopes IS NOT TRUE AND e.history IS NOT TRUE)
            OR (e.envelopes AND s.status = %(completed)s) END)
ORDER BY t.id
"""


def evidence_rows(lo: int, hi: int, now: dt.datetime) -> list[dict[str, Any]]:
    """Terminal tasks in (lo, hi] that the evidence rule may fault, with their evidence.

    Left out: a task whose deciding reply agrees, a task with A2A history only,
    and a failed or cancelled task whose envelopes hold no deciding reply. A task
    coming back ``decided`` has a deciding reply that contradicts it (a suspect).
    """
    params = {
        "lo": lo,
        "hi": hi,
        "now": now,
        "envelope": Message.Source.ENVELOPE,
        "reply": task_states.AGENT_REPLY,
        "completed": "completed",
    }
    return _dicts(EVIDENCE_SQL, params)


def last_completed_requests(task_pks: Sequence[int]) -> dict[int, str]:
    """Per task, the type of its last completed envelope that is not an agent reply."""
    if not task_pks:
        return {}
    sql = (
        f"SELECT DISTINCT ON (m.task_id) m.task_id, m.type FROM {_table(Message)} m "
        f"JOIN {MESSAGE_KEYS.name} k ON k.state = m.state AND k.stop_reason = m.stop_reason "
        f"WHERE m.task_id = ANY(%s) AND m.source = %s AND m.type <> %s AND k.plain_completed "
        f"ORDER BY m.task_id, m.created_at DESC NULLS FIRST, m.id DESC"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [list(task_pks), Message.Source.ENVELOPE, task_states.AGENT_REPLY])
        return dict(cursor.fetchall())


# --- messages ------------------------------------------------------------------------------

MESSAGE_ROW_COLUMNS = (
    "id",
    "message_id",
    "source",
    "state",
    "stop_reason",
    *PROJECTION_COLUMNS,
    "projection_version",
    "updated_at",
)


def message_rows(lo: int, hi: int, version: int, bound: dt.datetime) -> list[dict[str, Any]]:
    """Envelopes in (lo, hi] with a projection to look at or stamped beyond ``bound``."""
    select = ", ".join(f"m.{c}" for c in MESSAGE_ROW_COLUMNS)
    join = MESSAGE_KEYS.join(["m.state", "m.stop_reason"])
    sql = (
        f"SELECT {select}, k.n IS NULL AS unknown FROM {_table(Message)} m {join} "
        f"WHERE m.id > %s AND m.id <= %s AND m.source = %s AND (k.n IS NULL OR k.flagged "
        f"OR m.projection_version <> %s OR m.updated_at > %s OR {MESSAGE_KEYS.differs('m')}) "
        f"ORDER BY m.id"
    )
    return _dicts(sql, [lo, hi, Message.Source.ENVELOPE, version, bound])


# --- runtime operations --------------------------------------------------------------------

OPERATION_ROW_COLUMNS = (
    "id",
    "operation_id",
    *OPERATION_KEY_COLUMNS,
    "terminal",
    "updated_at",
    *PROJECTION_COLUMNS,
    "projection_version",
)


def operation_rows(
    lo: int, hi: int, version: int, pending_cutoff: dt.datetime
) -> list[dict[str, Any]]:
    """Operations in (lo, hi] with a finding possible from their tuple or own columns."""
    select = ", ".join(f"o.{c}" for c in OPERATION_ROW_COLUMNS)
    join = OPERATION_KEYS.join([f"o.{c}" for c in OPERATION_KEY_COLUMNS])
    sql = (
        f"SELECT {select}, k.n IS NULL AS unknown FROM {_table(RuntimeOperation)} o {join} "
        f"WHERE o.id > %s AND o.id <= %s AND (k.n IS NULL OR k.flagged "
        f"OR o.projection_version <> %s OR {OPERATION_KEYS.differs('o')} "
        f"OR (k.pending AND o.updated_at < %s) OR (k.known AND o.terminal <> k.our_terminal)) "
        f"ORDER BY o.id"
    )
    return _dicts(sql, [lo, hi, version, pending_cutoff])
