"""The per-agent conformance scorecard (issue #17, point 5): how well each agent follows
the protocol, computed from what the mirror already holds.

Each line counts the tasks an agent (``Task.agent_id``: the agent that does the work
and reports its state; an A2A task's target) is at fault on, and links to exactly
those rows: the task list filtered by agent and by ``tasks.conformance``'s filter of
that line, the same definition the count was made with.

- non-canonical spellings, unmapped states, completed tasks no agent reply decides:
  the state tables' rules (``tasks.conformance``), counted per primary-key range of
  tasks in one ``GROUP BY agent_id`` each (``CHUNK`` rows a statement);
- time in ``input-required`` / ``auth-required``: the audited state history (every
  state change is audited), one statement per pause reason over the audit entries
  into or out of a pause;
- how the console's cancels of its tasks ended (honoured, refused ``-32002``, lost
  ``-32010``, timed out ``-32011``) and how long they took to end: one statement
  per outcome from the (small) cancel request table;
- A2A protocol versions seen: the stored agent card.

Per agent a few rows come back per statement, never a row per task.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Count, Q
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from beeos_console.auditlog.models import AuditEntry
from beeos_console.cancels.models import CancelRequest
from beeos_console.core.links import object_url, query_string
from tasks import conformance as checks
from tasks.models import Task

from . import selectors
from .models import AgentCard, AgentScorecard

CHUNK = 50_000  # tasks per aggregate statement
RANK_SCALE = 10**12  # rank = level × RANK_SCALE + the worst line's count
# A cancel honoured more slowly than this (90th percentile) is noted.
SLOW_CANCEL_SECONDS = 300

PASSES, NOTE, WARNING, FAILING = 0, 1, 2, 3
LEVEL_WORDS = {
    PASSES: _("passes"),
    NOTE: _("note"),
    WARNING: _("warning"),
    FAILING: _("failing"),
}
# The badge colours (never without the words): green, blue, amber, red.
LEVEL_STYLES = {PASSES: "green", NOTE: "blue", WARNING: "amber", FAILING: "red"}


@dataclass(frozen=True)
class Line:
    """One scorecard line: its words, how bad a count is, and its evidence filter."""

    key: str
    label: Any  # lazy: said in the reader's language
    explain: Any
    level_when_found: int  # the level when the line counts any task
    evidence: tuple[str, str] | None  # the task list's (filter, value), None: the card
    timed: bool = False  # it measures time too (median, p90)


LINES: tuple[Line, ...] = (
    Line(
        "unmapped",
        _("States no table knows (unmapped)"),
        _("Tasks whose raw state no state table knows: the console cannot say what happened."),
        FAILING,
        ("conformance", checks.UNMAPPED),
    ),
    Line(
        "no_deciding_reply",
        _("Completed with no deciding agent reply"),
        _(
            "Completed tasks whose message envelopes hold no terminal agent reply: "
            "nothing the agent said decides the result."
        ),
        FAILING,
        ("conformance", checks.NO_DECIDING_REPLY),
    ),
    Line(
        "cancel_lost",
        _("Cancels lost after dispatch (-32010)"),
        _("Console cancels whose connection was lost after dispatch: outcome uncertain."),
        WARNING,
        ("cancel_outcome", checks.A2A_LOST_AFTER_DISPATCH),
        timed=True,
    ),
    Line(
        "cancel_timed_out",
        _("Cancels timed out (-32011)"),
        _("Console cancels that timed out: outcome uncertain."),
        WARNING,
        ("cancel_outcome", checks.A2A_TIMED_OUT),
        timed=True,
    ),
    Line(
        "cancel_refused",
        _("Cancels refused as not cancelable (-32002)"),
        _("Console cancels the agent refused: the task had ended or could not be stopped."),
        NOTE,
        ("cancel_outcome", checks.A2A_NOT_CANCELABLE),
        timed=True,
    ),
    Line(
        "non_canonical",
        _("States sent in a non-canonical spelling"),
        _(
            "Tasks whose raw state is accepted but not spelled as the tables write it "
            "(letter case, blanks, the other cancel spelling)."
        ),
        NOTE,
        ("conformance", checks.NON_CANONICAL),
    ),
    Line(
        "input_required",
        _("Time waiting for input (input-required)"),
        _(
            "Tasks that paused for the caller's input; noted when a pause outlasted the "
            "stuck limit."
        ),
        NOTE,
        ("conformance", checks.INPUT_REQUIRED),
        timed=True,
    ),
    Line(
        "auth_required",
        _("Time waiting for authorisation (auth-required)"),
        _(
            "Tasks that paused for the caller's authorisation; noted when a pause outlasted "
            "the stuck limit."
        ),
        NOTE,
        ("conformance", checks.AUTH_REQUIRED),
        timed=True,
    ),
    Line(
        "cancel_honoured",
        _("Cancels honoured"),
        _("Console cancels that took effect; noted when the slowest tenth took over 5 minutes."),
        NOTE,
        ("cancel_outcome", checks.HONOURED),
        timed=True,
    ),
    Line(
        "protocol_versions",
        _("A2A protocol versions seen"),
        _("The versions its agent card offers; noted when none is 1.0 or later."),
        NOTE,
        None,
    ),
)
LINES_BY_KEY = {line.key: line for line in LINES}
CANCEL_LINES = {
    "cancel_honoured": checks.HONOURED,
    "cancel_refused": checks.A2A_NOT_CANCELABLE,
    "cancel_lost": checks.A2A_LOST_AFTER_DISPATCH,
    "cancel_timed_out": checks.A2A_TIMED_OUT,
}


# --- computing ----------------------------------------------------------------------


Figures = dict[str, dict[str, Any]]  # line key -> {"count": …, "median_seconds": …}


def _ranges(chunk: int) -> list[tuple[int, int]]:
    """(after, last id) of each primary-key range of ``chunk`` tasks."""
    found, last = [], 0
    while True:
        with connection.cursor() as cursor:
            cursor.execute(
                f"SELECT max(id) FROM (SELECT id FROM {Task._meta.db_table} WHERE id > %s "
                "ORDER BY id LIMIT %s) r",
                [last, chunk],
            )
            hi = cursor.fetchone()[0]
        if hi is None:
            return found
        found.append((last, hi))
        last = hi


def _task_lines(
    figures: dict[str, Figures], tasks: dict[str, int], classes: checks.StateClasses, chunk: int
) -> None:
    """Tasks, spellings, unmapped states, undecided completions: per range, GROUP BY agent."""
    counted = {
        "tasks": Count("pk"),
        "non_canonical": Count("pk", filter=checks.pairs_q(classes.non_canonical)),
        "unmapped": Count("pk", filter=checks.pairs_q(classes.unmapped)),
        "no_deciding_reply": Count(
            "pk",
            filter=checks.no_deciding_reply_q(classes, checks.terminal_message_states()),
        ),
    }
    base = Task.objects.exclude(agent_id="").order_by()
    for lo, hi in _ranges(chunk):
        rows = base.filter(pk__gt=lo, pk__lte=hi).values("agent_id").annotate(**counted)
        for row in rows:
            agent = row["agent_id"]
            tasks[agent] = tasks.get(agent, 0) + row["tasks"]
            for key in ("non_canonical", "unmapped", "no_deciding_reply"):
                line = figures[agent].setdefault(key, {"count": 0})
                line["count"] += row[key]


PERCENTILES = (
    "count(DISTINCT task), sum(s), percentile_cont(0.5) WITHIN GROUP (ORDER BY s), "
    "percentile_cont(0.9) WITHIN GROUP (ORDER BY s), max(s)"
)


def _timed(figures: dict[str, Figures], key: str, sql: str, params: Any) -> None:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    for agent, count, total, median, p90, longest in rows:
        figures[agent][key] = {
            "count": count,
            "total_seconds": round(float(total or 0), 3),
            "median_seconds": round(float(median or 0), 3),
            "p90_seconds": round(float(p90 or 0), 3),
            "max_seconds": round(float(longest or 0), 3),
        }


def _cancel_lines(figures: dict[str, Figures]) -> None:
    """Per outcome: the tasks with such a cancel, and how long those cancels took to end."""
    for key, outcome in CANCEL_LINES.items():
        requests = CancelRequest.objects.filter(
            checks.cancel_outcome_q(outcome), object_kind="task"
        ).values("id", "protocol", "object_id", "created_at", "finished_at", "resolved_at")
        inner, params = requests.query.sql_with_params()
        sql = (
            f"SELECT t.agent_id, {PERCENTILES} FROM ("
            "SELECT t.agent_id, t.id AS task, extract(epoch FROM "
            "coalesce(c.resolved_at, c.finished_at, c.created_at) - c.created_at) AS s "
            f"FROM ({inner}) c JOIN {Task._meta.db_table} t "
            "ON t.protocol = c.protocol AND t.task_id = c.object_id WHERE t.agent_id <> ''"
            ") t GROUP BY t.agent_id"
        )
        _timed(figures, key, sql, params)


# Pauses from the audited state history: spans out of a pause (since the previous change,
# or since the task was first mirrored), the pause it is in now or was last in (until now,
# or its last write), and tasks paused since they were first mirrored with no change since.
PAUSE_SQL = f"""
WITH paused(protocol, raw) AS (SELECT * FROM unnest(%(protocols)s::text[], %(raws)s::text[])),
flagged AS (
    SELECT a.id, a.at, a.object_id, a.detail ->> 'protocol' AS protocol,
        EXISTS (SELECT 1 FROM paused p WHERE p.protocol = a.detail ->> 'protocol'
                AND p.raw = a.before ->> 'raw_state') AS was_paused,
        EXISTS (SELECT 1 FROM paused p WHERE p.protocol = a.detail ->> 'protocol'
                AND p.raw = a.after ->> 'raw_state') AS now_paused
    FROM {AuditEntry._meta.db_table} a
    WHERE a.object_kind = 'task' AND a.action = 'task.state_changed'
      AND (a.before ->> 'raw_state' = ANY(%(raws)s) OR a.after ->> 'raw_state' = ANY(%(raws)s))
),
seq AS (
    SELECT t.agent_id, t.id AS task, t.first_seen_at, t.mirrored_at, f.at, f.was_paused,
        f.now_paused, (t.protocol, t.raw_state) IN (SELECT protocol, raw FROM paused) AS paused_now,
        lag(f.at) OVER w AS prev_at, lead(f.at) OVER w AS next_at
    FROM flagged f JOIN {Task._meta.db_table} t
        ON t.task_id = f.object_id AND t.protocol = f.protocol
    WHERE t.agent_id <> '' AND (f.was_paused OR f.now_paused)
    WINDOW w AS (PARTITION BY t.id ORDER BY f.at, f.id)
),
spans AS (
    SELECT agent_id, task, extract(epoch FROM at - coalesce(prev_at, first_seen_at)) AS s
    FROM seq WHERE was_paused
    UNION ALL
    SELECT agent_id, task,
        extract(epoch FROM CASE WHEN paused_now THEN %(now)s ELSE mirrored_at END - at)
    FROM seq WHERE now_paused AND next_at IS NULL
    UNION ALL
    SELECT t.agent_id, t.id, extract(epoch FROM %(now)s - t.first_seen_at)
    FROM {Task._meta.db_table} t
    WHERE t.agent_id <> '' AND (t.protocol, t.raw_state) IN (SELECT protocol, raw FROM paused)
      AND NOT EXISTS (
        SELECT 1 FROM {AuditEntry._meta.db_table} a WHERE a.object_kind = 'task'
          AND a.object_id = t.task_id AND a.action = 'task.state_changed'
          AND a.detail ->> 'protocol' = t.protocol)
)
SELECT agent_id, {PERCENTILES} FROM spans GROUP BY agent_id
"""


def _pause_lines(
    figures: dict[str, Figures], classes: checks.StateClasses, now: dt.datetime
) -> None:
    for reason in checks.PAUSE_REASONS:
        pairs = classes.paused.get(reason, [])
        if not pairs:
            continue
        params = {
            "protocols": [p for p, _raw in pairs],
            "raws": [raw for _p, raw in pairs],
            "now": now,
        }
        _timed(figures, reason, PAUSE_SQL, params)


def _versions(card: AgentCard | None) -> list[str]:
    return list(card.protocol_versions or []) if card is not None and card.raw_card else []


def _is_current(version: str) -> bool:
    head = version.strip().split(".", 1)[0]
    return head.isdigit() and int(head) >= 1


def level_of(key: str, figure: dict[str, Any]) -> int:
    """How bad one line's figures are (``PASSES`` when it counts nothing)."""
    line = LINES_BY_KEY[key]
    if key == "protocol_versions":
        versions = figure.get("versions") or []
        return line.level_when_found if versions and not any(map(_is_current, versions)) else 0
    if not figure.get("count"):
        return PASSES
    if key in checks.PAUSE_REASONS:
        stuck = 60 * settings.CONSOLE_STUCK_AFTER_MINUTES
        return line.level_when_found if figure.get("max_seconds", 0) > stuck else PASSES
    if key == "cancel_honoured":
        slow = figure.get("p90_seconds", 0) > SLOW_CANCEL_SECONDS
        return line.level_when_found if slow else PASSES
    return line.level_when_found


def scorecard_for(
    agent_id: str, figures: Figures, tasks: int, card: AgentCard | None, now: dt.datetime
) -> AgentScorecard:
    """One agent's scorecard row from its figures: every line, its level, the worst one."""
    lines: Figures = {}
    for line in LINES:
        if line.key == "protocol_versions":
            figure: dict[str, Any] = {"versions": _versions(card), "count": len(_versions(card))}
        else:
            figure = {"count": 0, **figures.get(line.key, {})}
        figure["level"] = level_of(line.key, figure)
        lines[line.key] = figure
    worst_key, worst = max(
        lines.items(),
        key=lambda item: (item[1]["level"], item[1]["count"] if item[1]["level"] else 0),
    )
    level = worst["level"]
    count = worst["count"] if level else 0
    return AgentScorecard(
        agent_id=agent_id,
        computed_at=now,
        tasks=tasks,
        lines=lines,
        protocol_versions=_versions(card),
        worst_line=worst_key if level else "",
        worst_level=level,
        worst_count=count,
        rank=level * RANK_SCALE + min(count, RANK_SCALE - 1),
    )


STORED_FIELDS = (
    "computed_at",
    "tasks",
    "lines",
    "protocol_versions",
    "worst_line",
    "worst_level",
    "worst_count",
    "rank",
)


@contextmanager
def _no_jit() -> Iterator[None]:
    """JIT compiling each range's aggregate (about 0.2 s) costs more than it saves, as in
    the projection audit's sweep: off for this session while scoring."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT set_config('jit', 'off', false)")
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute("RESET jit")


def score_agents(
    now: dt.datetime | None = None,
    chunk: int = CHUNK,
    progress: Callable[[str], None] | None = None,
) -> dict[str, int]:
    """Score every agent (every agent a task names, and every agent with a card) and store
    the scorecards; agents no longer seen lose theirs. Returns what it did."""
    now = now or timezone.now()
    figures: dict[str, Figures] = defaultdict(dict)
    tasks: dict[str, int] = {}
    classes = checks.state_classes()  # the raw states stored now, classified once
    with _no_jit():
        _task_lines(figures, tasks, classes, chunk)
        if progress:
            progress(f"tasks: {sum(tasks.values()):,} scored for {len(tasks):,} agents")
        _pause_lines(figures, classes, now)
        _cancel_lines(figures)
    cards = {card.agent_id: card for card in AgentCard.objects.all()}
    agents = set(selectors.agents().values_list("agent_id", flat=True)) | set(cards) | set(figures)
    rows = [
        scorecard_for(agent, figures.get(agent, {}), tasks.get(agent, 0), cards.get(agent), now)
        for agent in sorted(agents)
    ]
    with transaction.atomic():
        gone, _ = AgentScorecard.objects.exclude(agent_id__in=sorted(agents)).delete()
        AgentScorecard.objects.bulk_create(
            rows,
            batch_size=500,
            update_conflicts=True,
            unique_fields=["agent_id"],
            update_fields=list(STORED_FIELDS),
        )
    failing = sum(1 for row in rows if row.worst_level)
    if progress:
        progress(f"scorecards: {len(rows):,} agents, {failing:,} with a line that does not pass")
    return {"agents": len(rows), "not_passing": failing, "removed": gone}


# --- showing ------------------------------------------------------------------------------


def evidence_url(agent_id: str, key: str) -> str:
    """The rows behind one line: the task list filtered by agent and the line's filter."""
    line = LINES_BY_KEY[key]
    if line.evidence is None:
        return object_url("agents:detail", agent_id) + "#agent-card"
    name, value = line.evidence
    return reverse("tasks:list") + query_string({"agent_id": agent_id, name: value})


@dataclass(frozen=True)
class ShownLine:
    line: Line
    figure: dict[str, Any]
    level: int
    url: str

    @property
    def times(self) -> str:
        """Median · 90th percentile · longest, in words ("" where the line times nothing)."""
        if not self.line.timed or not self.figure.get("count"):
            return ""
        keys = ("median_seconds", "p90_seconds", "max_seconds")
        return " · ".join(duration_words(self.figure.get(key, 0)) for key in keys)

    @property
    def level_words(self) -> Any:
        return LEVEL_WORDS[self.level]

    @property
    def style(self) -> str:
        return LEVEL_STYLES[self.level]


def duration_words(seconds: float) -> str:
    """A duration in the reader's language: "45 s", "12 min", "3.5 h", "2.1 d"."""
    seconds = max(float(seconds or 0), 0.0)
    if seconds < 60:
        return gettext("%(n)s s") % {"n": f"{seconds:.0f}"}
    if seconds < 3600:
        return gettext("%(n)s min") % {"n": f"{seconds / 60:.0f}"}
    if seconds < 86400:
        return gettext("%(n)s h") % {"n": f"{seconds / 3600:.1f}"}
    return gettext("%(n)s d") % {"n": f"{seconds / 86400:.1f}"}


def shown_lines(card: AgentScorecard) -> list[ShownLine]:
    """The scorecard's lines in display order, each with its evidence link."""
    shown = []
    for line in LINES:
        figure = (card.lines or {}).get(line.key) or {"count": 0}
        level = int(figure.get("level", 0))
        shown.append(ShownLine(line, figure, level, evidence_url(card.agent_id, line.key)))
    return shown


def line_choices() -> list[tuple[str, Any]]:
    return [(line.key, line.label) for line in LINES]


def worst_words(card: AgentScorecard) -> Any:
    line = LINES_BY_KEY.get(card.worst_line)
    return line.label if line is not None else _("every line passes")


def newest_computed_at() -> dt.datetime | None:
    return (
        AgentScorecard.objects.order_by("-computed_at").values_list("computed_at", flat=True)
    ).first()


def failing_q() -> Q:
    return Q(worst_level__gt=PASSES)
