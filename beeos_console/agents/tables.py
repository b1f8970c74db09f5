"""The agents list table: declared columns, escaped by default.

Rows are the agents' any-role counter rows; the view attaches each row's counts
(``counts``: ``selectors.AgentCounts``) and stuck work (``stuck``: role -> tasks)
for the page, two queries whatever the page size.
"""

from __future__ import annotations

from typing import Any

from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from beeos_console.core.tables import Column, Table
from beeos_console.mirror.columns import AgeColumn, AgentColumn, badge

from .selectors import LIST_STUCK_CAP, ROLE_LABELS, STUCK_CAP


def status_counts(
    counts: dict[str, int] | None, order: list[tuple[str, int]] | None = None
) -> SafeString:
    """``[completed] 12 · [failed] 3``: each status as its badge (text, not colour alone)."""
    items = order if order is not None else sorted((counts or {}).items())
    items = [(status, n) for status, n in items if n]
    if not items:
        return format_html('<span class="muted">{}</span>', "—")
    return format_html_join(
        " · ", '<span class="count">{} {}</span>', ((badge(s), n) for s, n in items)
    )


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

    def row_attrs(self, row: Any) -> dict[str, Any]:
        return {"id": f"agent-row-{row.pk}"}

    def _role(self, row: Any, role: str) -> SafeString:
        counts = getattr(row, "counts", None)
        return status_counts(counts.by_role.get(role) if counts else None)

    def render_as_caller(self, value: Any, row: Any) -> SafeString:
        return self._role(row, "caller")

    def render_as_target(self, value: Any, row: Any) -> SafeString:
        return self._role(row, "target")

    def render_as_agent(self, value: Any, row: Any) -> SafeString:
        return self._role(row, "agent")

    def render_stuck(self, value: Any, row: Any) -> SafeString:
        stuck = getattr(row, "stuck", None) or {}
        if not stuck:
            return format_html('<span class="muted">{}</span>', gettext("none"))
        return format_html_join(
            " · ",
            '<strong class="stuck">{}</strong> {}',
            ((capped(n, LIST_STUCK_CAP), ROLE_LABELS[role]) for role, n in stuck.items()),
        )
