"""Maintained per-agent counters (see ``AgentCount``): the agents list never counts tasks.

A task is counted once per role an agent holds on it (``agent``, ``caller``,
``target``) under its display status, and once on the agent's any-role row. The
task services call ``AgentTally.created`` / ``changed`` for every task they write
and ``flush`` inside the same transaction, so counts and tasks commit together.
Every write also moves the agent's ``last_activity`` forward (never back).
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from typing import Any, NamedTuple

from django.db import connection, transaction

from beeos_console.mirror.models import AgentCount

# Role -> the task column that names the agent in that role.
ROLE_COLUMNS = {"agent": "agent_id", "caller": "caller_agent_id", "target": "target_agent_id"}
ROLES = tuple(ROLE_COLUMNS)
ANY_ROLE = ""  # the agent's row in the agents list: tasks in any role, all statuses

AgentKey = tuple[str, str, str]  # (agent_id, role, status)


class AgentState(NamedTuple):
    """What the counters read of one task: its status and the agents on it."""

    status: str
    agents: tuple[str, str, str]  # in ROLES order; "" when the task names none


def state_of(task: Any) -> AgentState:
    return AgentState(
        str(task.status)[:32], tuple(getattr(task, c) or "" for c in ROLE_COLUMNS.values())
    )


def state_of_values(row: dict[str, Any]) -> AgentState:
    """``state_of`` for a row read with ``.values()`` (status and the role columns)."""
    return AgentState(str(row["status"])[:32], tuple(row[c] or "" for c in ROLE_COLUMNS.values()))


def activity_of(task: Any) -> dt.datetime:
    """When the task last moved, by the upstream clock (our clock when it gives none)."""
    return (
        task.updated_at
        or task.created_at
        or getattr(task, "first_seen_at", None)
        or dt.datetime.now(dt.UTC)
    )


def keys_of(state: AgentState) -> list[AgentKey]:
    keys = [
        (agent, role, state.status)
        for role, agent in zip(ROLES, state.agents, strict=True)
        if agent
    ]
    keys += [(agent, ANY_ROLE, "") for agent in sorted({a for a in state.agents if a})]
    return keys


class AgentTally:
    """Counter deltas and activity of one transaction's task writes, upserted in one go."""

    def __init__(self) -> None:
        self.deltas: Counter[AgentKey] = Counter()
        self.activity: dict[AgentKey, dt.datetime] = {}

    def created(self, task: Any) -> None:
        self.changed(None, task)

    def changed(self, before: AgentState | None, task: Any) -> None:
        """One task written: moved from ``before`` (None: a new task) to what it is now."""
        if before is not None:
            for key in keys_of(before):
                self.deltas[key] -= 1
        when = activity_of(task)
        for key in keys_of(state_of(task)):
            self.deltas[key] += 1
            seen = self.activity.get(key)
            self.activity[key] = when if seen is None else max(seen, when)

    def deleted(self, state: AgentState) -> None:
        for key in keys_of(state):
            self.deltas[key] -= 1

    def flush(self) -> None:
        """One upsert, rows in key order (two writers never deadlock)."""
        keys = sorted(set(self.deltas) | set(self.activity))
        rows = [(*key, self.deltas.get(key, 0), self.activity.get(key)) for key in keys]
        rows = [row for row in rows if row[3] or row[4] is not None]
        self.deltas.clear()
        self.activity.clear()
        if not rows:
            return
        table = AgentCount._meta.db_table
        values = ", ".join(["(%s, %s, %s, %s, %s::timestamptz)"] * len(rows))
        sql = (
            f"INSERT INTO {table} (agent_id, role, status, count, last_activity) "
            f"VALUES {values} ON CONFLICT (agent_id, role, status) DO UPDATE SET "
            f"count = {table}.count + EXCLUDED.count, "
            f"last_activity = GREATEST({table}.last_activity, EXCLUDED.last_activity)"
        )
        with connection.cursor() as cursor:
            cursor.execute(sql, [value for row in rows for value in row])


def on_write(before: AgentState | None, task: Any) -> None:
    """The one-record path: count one task write now (inside its transaction)."""
    tally = AgentTally()
    tally.changed(before, task)
    tally.flush()


# The counters recomputed from the task table (set-based; the migration that created
# the table ran the same statement). %s: the task table.
REBUILD_SQL = """
INSERT INTO {counts} (agent_id, role, status, count, last_activity)
SELECT agent, role, status, count(*), max(activity) FROM (
    SELECT t.agent_id AS agent, 'agent' AS role, left(t.status, 32) AS status,
           coalesce(t.updated_at, t.created_at, t.first_seen_at) AS activity
    FROM {tasks} t WHERE t.agent_id <> ''
    UNION ALL
    SELECT t.caller_agent_id, 'caller', left(t.status, 32),
           coalesce(t.updated_at, t.created_at, t.first_seen_at)
    FROM {tasks} t WHERE t.caller_agent_id <> ''
    UNION ALL
    SELECT t.target_agent_id, 'target', left(t.status, 32),
           coalesce(t.updated_at, t.created_at, t.first_seen_at)
    FROM {tasks} t WHERE t.target_agent_id <> ''
    UNION ALL
    SELECT a.agent, '', '', coalesce(t.updated_at, t.created_at, t.first_seen_at)
    FROM {tasks} t CROSS JOIN LATERAL (
        SELECT DISTINCT x FROM unnest(ARRAY[t.agent_id, t.caller_agent_id, t.target_agent_id]) x
        WHERE x <> ''
    ) a(agent)
) s
GROUP BY agent, role, status
"""


@transaction.atomic
def rebuild(task_model: type) -> int:
    """Recompute every agent counter from the task table (full scan: maintenance only)."""
    AgentCount.objects.all().delete()
    sql = REBUILD_SQL.format(counts=AgentCount._meta.db_table, tasks=task_model._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(sql)
        return cursor.rowcount
