"""The dashboard's tables (``core.tables``): counts, stuck work, attention, cancels."""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.urls import reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from beeos_console.core.tables import AgeColumn, CodeColumn, Column, Table, age
from beeos_console.mirror.columns import IdColumn, RawColumn, StatusColumn, short_id, url_for


class TaskCountTable(Table):
    """Tasks by product status: rows of ``(status, last 24 h, all)``, each count a filtered list."""

    css_class = "counts"
    empty_text = _("No tasks mirrored yet.")
    status = StatusColumn(_("Status"), accessor="0")
    day = Column(_("Last 24 h"), accessor="", render="render_day")
    total = Column(_("All"), accessor="", render="render_total")

    def __init__(self, rows: Any, *, now: dt.datetime, window_query: str) -> None:
        super().__init__(rows, now=now)
        self.list_url = reverse("tasks:list")
        self.window_query = window_query

    def render_day(self, value: Any, row: tuple) -> SafeString:
        """The list of exactly the rows counted: this status, created in the window."""
        return format_html(
            '<a href="{}?status={}&amp;{}" class="num">{}</a>',
            self.list_url,
            row[0],
            self.window_query,
            row[1],
        )

    def render_total(self, value: Any, row: tuple) -> SafeString:
        return format_html(
            '<a href="{}?status={}" class="num">{}</a>', self.list_url, row[0], row[2]
        )


class OperationCountTable(TaskCountTable):
    """Operations by display status, each count a filtered list."""

    empty_text = _("No runtime operations mirrored yet.")

    def __init__(self, rows: Any, *, now: dt.datetime, window_query: str) -> None:
        super().__init__(rows, now=now, window_query=window_query)
        self.list_url = reverse("operations:list")


class StuckTaskTable(Table):
    empty_text = _("Nothing stuck.")
    task_id = IdColumn(_("Task"), url="tasks:detail", length=36, query="protocol_query")
    status = StatusColumn(_("Status"))
    raw_state = RawColumn(_("Raw state"))
    protocol = Column(_("Protocol"), render="render_protocol")
    agent_id = CodeColumn(_("Agent"), length=20)
    updated_at = AgeColumn(_("Last change"))

    def protocol_query(self, task: Any) -> str:
        return f"?protocol={task.protocol}"

    def render_protocol(self, value: str, task: Any) -> SafeString:
        return format_html("{}", task.get_protocol_display())


class CancelledTaskTable(StuckTaskTable):
    empty_text = _("No cancellations yet.")
    updated_at = AgeColumn(_("When"))

    def __init__(self, rows: Any) -> None:
        super().__init__(rows, exclude=("status",))


class AttentionTable(Table):
    empty_text = _("Nothing needs attention.")
    operation_id = IdColumn(_("Operation"), url="operations:detail", length=30)
    raw_status = RawColumn(_("Raw status"))
    effect_state = RawColumn("effectState")
    projection_state = RawColumn(_("Projection"))
    error_code = RawColumn(_("Error code"))
    method = CodeColumn(_("Method"))
    updated_at = AgeColumn(_("Updated"))


class UncertainCancelTable(Table):
    empty_text = _("No uncertain cancels open.")
    object_id = Column(_("Object"), render="render_object")
    object_kind = Column(_("Kind"), render="render_kind")
    requested_by = Column(_("By"), empty="")
    finished_at = AgeColumn(_("Uncertain since"))
    checks = Column(_("Re-reads"), css_class="num")
    next_check_at = Column(_("Next re-read"), render="render_next")

    def render_object(self, value: str, c: Any) -> SafeString:
        if c.object_kind == "task":
            href = url_for(self, "tasks:detail")(value, protocol=c.protocol)
        else:
            href = url_for(self, "operations:detail")(value)
        return short_id(value, 36, href)

    def render_kind(self, value: str, c: Any) -> SafeString:
        if c.protocol:
            return format_html('{} <span class="muted">({})</span>', value, c.protocol)
        return format_html("{}", value)

    def render_next(self, value: Any, c: Any) -> SafeString:
        if c.gave_up_at:
            return format_html(
                "<strong>{}</strong> {} — {}",
                gettext("gave up"),
                age(c.gave_up_at),
                gettext("check by hand, do not replay"),
            )
        if value:
            return age(value)
        return format_html('<span class="muted">{}</span>', "—")


def dashboard_tables(context: dict[str, Any]) -> dict[str, Table]:
    """The dashboard context's rows as tables (the template prints them)."""
    now = context["now"]
    window_query = context["window"].query
    return {
        "task_counts_table": TaskCountTable(
            context["task_counts"], now=now, window_query=window_query
        ),
        "operation_counts_table": OperationCountTable(
            context["operation_counts"], now=now, window_query=window_query
        ),
        "stuck_table": StuckTaskTable(context["stuck"]),
        "attention_table": AttentionTable([*context["attention"], *context["pending_late"]]),
        "uncertain_table": UncertainCancelTable(context["uncertain_cancels"]),
        "cancelled_table": CancelledTaskTable(context["cancelled"]),
    }
