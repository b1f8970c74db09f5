"""Every read the agents pages need beyond the list itself.

Counts come from the maintained per-agent counters (``AgentCount``), never from
counting tasks; the only task reads are bounded: stuck work (non-terminal rows,
partial indexes ``task_*_active_idx``, capped at ``STUCK_CAP``) and who delegates
to whom (one window of ``created_at`` on ``task_caller/target_agent_created_idx``).
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from django.db import connection
from django.db.models import Exists, OuterRef, Q, QuerySet
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from beeos_console.mirror.agent_counters import ANY_ROLE, ROLE_COLUMNS
from beeos_console.mirror.attention import stuck_cutoff, stuck_q
from beeos_console.mirror.models import AgentCount
from beeos_console.mirror.states import ACTIVE_PRODUCT_STATUSES, DISPLAY_STATUSES
from tasks.models import Task

from .models import AgentCard, AgentScorecard

STUCK_CAP = 1000  # stuck tasks counted per agent and role on its page, "1,000+" beyond
LIST_STUCK_CAP = 100  # … and on the list (50 agents a page): "100+"
EDGE_CAP = 12  # counterparts shown per direction (the busiest)
ROLE_LABELS = {"agent": _("as agent"), "caller": _("as caller"), "target": _("as target")}
WINDOWS = {
    "1h": (dt.timedelta(hours=1), _("last 1 h")),
    "24h": (dt.timedelta(hours=24), _("last 24 h")),
    "7d": (dt.timedelta(days=7), _("last 7 d")),
    "30d": (dt.timedelta(days=30), _("last 30 d")),
}
DEFAULT_WINDOW = "24h"
ACTIVE = sorted(ACTIVE_PRODUCT_STATUSES)


def agents() -> QuerySet[AgentCount]:
    """One row per agent seen on a task (the any-role counter row)."""
    return AgentCount.objects.filter(role=ANY_ROLE, last_activity__isnull=False)


def stuck_tasks(cutoff: dt.datetime | None = None) -> QuerySet[Task]:
    """Queued or processing tasks with no upstream change since the cutoff (the lists' rule)."""
    return Task.objects.filter(stuck_q(cutoff or stuck_cutoff()))


def with_stuck_work(qs: QuerySet[AgentCount]) -> QuerySet[AgentCount]:
    stuck = stuck_tasks()
    found = Q()
    for column in ROLE_COLUMNS.values():
        # "<> ''" lets the planner use the partial index task_*_active_idx.
        found |= Exists(stuck.filter(**{column: OuterRef("agent_id")}).exclude(**{column: ""}))
    return qs.filter(found)


@dataclass
class AgentCounts:
    """One agent's maintained counts: per role and status, and in any role."""

    by_role: dict[str, dict[str, int]] = field(default_factory=dict)
    total: int = 0
    last_activity: dt.datetime | None = None

    def role_total(self, role: str) -> int:
        return sum(self.by_role.get(role, {}).values())

    def rows(self) -> list[dict[str, Any]]:
        """Per role that has any tasks: its label and counts in display-status order."""
        rows = []
        for role, label in ROLE_LABELS.items():
            counts = self.by_role.get(role)
            if not counts or not any(counts.values()):
                continue
            ordered = [(s, counts.get(s, 0)) for s in DISPLAY_STATUSES if counts.get(s)]
            ordered += sorted((s, n) for s, n in counts.items() if s not in DISPLAY_STATUSES and n)
            rows.append(
                {"role": role, "label": label, "counts": ordered, "total": sum(counts.values())}
            )
        return rows


def counts_of(agent_ids: Sequence[str]) -> dict[str, AgentCounts]:
    """The maintained counts of these agents (one query)."""
    found: dict[str, AgentCounts] = defaultdict(AgentCounts)
    rows = AgentCount.objects.filter(agent_id__in=list(agent_ids)).values_list(
        "agent_id", "role", "status", "count", "last_activity"
    )
    for agent_id, role, status, count, last_activity in rows:
        counts = found[agent_id]
        if role == ANY_ROLE:
            counts.total, counts.last_activity = count, last_activity
        elif count:
            counts.by_role.setdefault(role, {})[status] = count
    return dict(found)


def _capped(column: str) -> str:
    return (
        f"(SELECT count(*) FROM (SELECT 1 FROM tasks_task t WHERE t.{column} = a.agent "
        f"AND t.{column} <> '' AND t.status = ANY(%(active)s) AND t.updated_at < %(cutoff)s "
        "LIMIT %(cap)s) s)"
    )


STUCK_SQL = (
    "SELECT a.agent, "
    + ", ".join(_capped(column) for column in ROLE_COLUMNS.values())
    + " FROM unnest(%(agents)s::text[]) AS a(agent)"
)


def stuck_of(agent_ids: Sequence[str], cap: int = STUCK_CAP) -> dict[str, dict[str, int]]:
    """Stuck tasks per agent and role (each capped at ``cap``; one query)."""
    if not agent_ids:
        return {}
    params = {
        "agents": list(agent_ids),
        "active": ACTIVE,
        "cutoff": stuck_cutoff(),
        "cap": cap,
    }
    with connection.cursor() as cursor:
        cursor.execute(STUCK_SQL, params)
        rows = cursor.fetchall()
    return {
        agent: {role: n for role, n in zip(ROLE_COLUMNS, counts, strict=True) if n}
        for agent, *counts in rows
    }


def card_of(agent_id: str) -> AgentCard | None:
    return AgentCard.objects.filter(agent_id=agent_id).first()


def scorecard_of(agent_id: str) -> AgentScorecard | None:
    return AgentScorecard.objects.filter(agent_id=agent_id).first()


def scorecards() -> QuerySet[AgentScorecard]:
    """Every agent's scorecard (the admins' ranking: ``rank``, worst first)."""
    return AgentScorecard.objects.all()


@dataclass(frozen=True)
class Edge:
    """Tasks one agent sent another in the window, and how many failed or were cancelled."""

    caller: str
    target: str
    count: int
    failed: int
    cancelled: int

    @property
    def failure_rate(self) -> float:
        return self.failed / self.count if self.count else 0.0

    @property
    def cancel_rate(self) -> float:
        return self.cancelled / self.count if self.count else 0.0


def _edges(agent_id: str, since: dt.datetime, *, sent: bool) -> tuple[list[Edge], int]:
    mine, other = (
        ("caller_agent_id", "target_agent_id") if sent else ("target_agent_id", "caller_agent_id")
    )
    sql = (
        f"SELECT {other}, count(*), count(*) FILTER (WHERE status = 'failed'), "
        "count(*) FILTER (WHERE status = 'cancelled'), count(*) OVER () "
        f"FROM tasks_task WHERE {mine} = %s AND {mine} <> '' AND created_at >= %s "
        f"AND {other} <> '' "
        f"GROUP BY {other} ORDER BY count(*) DESC, {other} LIMIT %s"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [agent_id, since, EDGE_CAP])
        rows = cursor.fetchall()
    edges = [
        Edge(agent_id, o, n, f, c) if sent else Edge(o, agent_id, n, f, c) for o, n, f, c, _ in rows
    ]
    return edges, (rows[0][4] if rows else 0)


@dataclass
class Delegation:
    window: str
    since: dt.datetime
    sends: list[Edge]
    receives: list[Edge]
    sends_total: int  # counterparts in the window (only EDGE_CAP shown)
    receives_total: int


def delegation(agent_id: str, window: str, now: dt.datetime | None = None) -> Delegation:
    """Who this agent sends tasks to and receives tasks from, created in the window."""
    span = WINDOWS[window][0]
    since = (now or timezone.now()) - span
    sends, sends_total = _edges(agent_id, since, sent=True)
    receives, receives_total = _edges(agent_id, since, sent=False)
    return Delegation(window, since, sends, receives, sends_total, receives_total)
