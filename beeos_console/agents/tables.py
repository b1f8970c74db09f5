"""The agents list and scorecard ranking tables: declared columns, escaped by default.

Rows are the agents' any-role counter rows; the view attaches each row's counts
(``counts``: ``selectors.AgentCounts``) and stuck work (``stuck``: role -> tasks)
for the page, two queries whatever the page size.
"""

from __future__ import annotations

from typing import Any

from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from beeos_console.core.tables import Column, Table
from beeos_console.mirror.columns import AgeColumn, AgentColumn, badge

from . import scorecard
from .selectors import LIST_STUCK_CAP, ROLE_LABELS, STUCK_CAP

NO_COUNTS = format_html('<span class="muted">{}</span>', "—")


def status_counts(
    counts: dict[str, int] | None,
    order: list[tuple[str, int]] | None = None,
    badges: dict[str, SafeString] | None = None,
) -> SafeString:
    """``[completed] 12 · [failed] 3``: each status as its badge (text, not colour alone).

    ``badges``: the badges drawn so far (a table passes one dict for all its cells, so
    each status is drawn once a page, not once per cell: the list's main cost).
    """
    items = order if order is not None else sorted((counts or {}).items())
    if badges is None:
        badges = {}
    cells = []
    for status, n in items:
        if n:
            html = badges.get(status)
            if html is None:
                html = badges[status] = badge(status)
            # Markup format_html escaped, and a number: nothing left to escape.
            cells.append(f'<span class="count">{html} {int(n)}</span>')
    return mark_safe(" · ".join(cells)) if cells else NO_COUNTS


def capped(n: int, cap: int = STUCK_CAP) -> str:
    """A capped count in words: "1,000+" when the count stopped at its cap."""
    return f"{cap:,}+" if n >= cap else f"{n:,}"


class AgentTable(Table):
    agent_id = AgentColumn(_("Agent"), length=40)
    total = Column(_("Tasks"), accessor="count", css_class="num")
    as_caller = Column(_("As caller"), accessor="agent_id", render="render_as_caller")
    as_target = Column(_("As target"), accessor="agent_id", render="render_as_target")
    as_agent = Column(_("As agent"), accessor="agent_id", render="render_as_agent")
    stuck = Column(_("Stuck work"), accessor="agent_id", render="render_stuck")
    last_activity = AgeColumn(_("Last activity"), sort_key="active")

    empty_text = _("No agents match these filters.")
    fields = ("agent_id", "role", "status", "count", "last_activity")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Drawn once a table (in the reader's language), not once a row.
        self.badges: dict[str, SafeString] = {}  # each status's badge
        self.no_stuck = format_html('<span class="muted">{}</span>', gettext("none"))
        self.role_labels = {role: str(label) for role, label in ROLE_LABELS.items()}

    def row_attrs(self, row: Any) -> dict[str, Any]:
        return {"id": f"agent-row-{row.pk}"}

    def _role(self, row: Any, role: str) -> SafeString:
        counts = getattr(row, "counts", None)
        return status_counts(counts.by_role.get(role) if counts else None, badges=self.badges)

    def render_as_caller(self, value: Any, row: Any) -> SafeString:
        return self._role(row, "caller")

    def render_as_target(self, value: Any, row: Any) -> SafeString:
        return self._role(row, "target")

    def render_as_agent(self, value: Any, row: Any) -> SafeString:
        return self._role(row, "agent")

    def render_stuck(self, value: Any, row: Any) -> SafeString:
        stuck = getattr(row, "stuck", None) or {}
        if not stuck:
            return self.no_stuck
        return format_html_join(
            " · ",
            '<strong class="stuck">{}</strong> {}',
            ((capped(n, LIST_STUCK_CAP), self.role_labels[role]) for role, n in stuck.items()),
        )


class ScorecardTable(Table):
    """The admins' ranking: each agent's worst line, its level and count, its evidence."""

    agent_id = AgentColumn(_("Agent"), length=40)
    worst = Column(_("Worst line"), accessor="worst_line", render="render_worst")
    level = Column(_("Level"), accessor="worst_level", render="render_level")
    worst_count = Column(_("Tasks on it"), accessor="worst_count", css_class="num")
    evidence = Column(_("Evidence"), accessor="worst_line", render="render_evidence")
    tasks = Column(_("Tasks as agent"), accessor="tasks", css_class="num")
    computed_at = AgeColumn(_("Scored"))

    empty_text = _("No scorecards match these filters (scoring runs after the sync, or now).")
    # ``rank``: the keyset cursor reads it.
    fields = (
        "agent_id",
        "worst_line",
        "worst_level",
        "worst_count",
        "tasks",
        "computed_at",
        "rank",
    )

    def row_attrs(self, row: Any) -> dict[str, Any]:
        return {"id": f"scorecard-row-{row.pk}"}

    def render_worst(self, value: Any, row: Any) -> SafeString:
        return format_html("{}", scorecard.worst_words(row))

    def render_level(self, value: Any, row: Any) -> SafeString:
        level = int(value or 0)
        return format_html(
            '<span class="badge badge-{} level">{}</span>',
            scorecard.LEVEL_STYLES[level],
            scorecard.LEVEL_WORDS[level],
        )

    def render_evidence(self, value: Any, row: Any) -> SafeString:
        if not value:
            return format_html('<span class="muted">{}</span>', "—")
        return format_html(
            '<a class="evidence-link" href="{}">{}</a>',
            scorecard.evidence_url(row.agent_id, value),
            gettext("see the tasks"),
        )
