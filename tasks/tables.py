"""The task and message list tables (``beeos_console.core.tables``): declared columns.

``TaskTable.row`` also builds the row that replaces a list row in place after
an inline cancel (``tasks.views.cancel_task_view``), so the list and the
updated row cannot drift apart. Every value is escaped.
"""

from __future__ import annotations

from typing import Any

from django.utils.html import format_html
from django.utils.safestring import SafeString
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy

from beeos_console.core.exports import ExportColumn
from beeos_console.core.tables import CodeColumn, Column, SelectColumn, Table, truncate
from beeos_console.mirror import i18n
from beeos_console.mirror.columns import (
    AgeColumn,
    AgentColumn,
    IdColumn,
    RawColumn,
    StatusColumn,
    badge,
    short_id,
    url_for,
)
from tasks.models import Message, Task


class UpdatedColumn(AgeColumn):
    """When the task last changed; for an operator, a link that cancels it there if it can."""

    def live_parts(self, value: Any, row: Any, table: Table) -> tuple[str, ...]:
        # Live, not kept with the row: it depends on the viewer (``table.operator``).
        updated = super().live_parts(value, row, table)
        if not (table.operator and table.cancellable(row)):
            return updated
        detail = url_for(table, "tasks:detail")(row.task_id, protocol=row.protocol)
        cancel = url_for(table, "tasks:cancel")(row.task_id, protocol=row.protocol, row=1)
        return (
            updated[0] + ' <a class="small" href="{}#cancel" hx-get="{}"'
            ' hx-target="closest tr" hx-swap="afterend" title="{}">{}</a>',
            *updated[1:],
            detail,
            cancel,
            table.gettext("Cancel this task"),
            table.gettext("Cancel…"),
        )


class TaskTable(Table):
    """Tasks for one viewer: ``exclude=("pick",)`` without bulk checkboxes, ``operator`` cancels."""

    pick = SelectColumn(value="pick_value", enabled="can_pick", label="pick_label")
    task_id = IdColumn(_("Task"), url="tasks:detail", length=30, query="protocol_query")
    status = StatusColumn(_("Status"))
    raw_state = RawColumn(_("Raw state"))
    protocol = Column(_("Protocol"), render="render_protocol", cache=True)
    reason = Column(
        _("Reason"), accessor=("reason", "error_code"), render="render_reason", cache=True
    )
    certainty = Column(
        _("Certainty · retry"),
        accessor=("outcome_certainty", "retry_policy"),
        css_class="small",
        render="render_certainty",
        cache=True,
    )
    agent_id = AgentColumn(_("Agent"), param="agent_id", title=_("Only this agent"), length=20)
    created_at = AgeColumn(_("Age"), sort_key="created")
    updated_at = UpdatedColumn(_("Updated"), sort_key="updated")

    empty_text = _("No tasks match these filters.")
    # Every cell but the two times reads only ``fields`` (``core.tables.Table.memo_rows``);
    # ``operator`` changes only the "Updated" cell, which is live.
    memo_rows = True
    # The columns the table reads (and the sorts page on): the list loads only these.
    fields = (
        "task_id",
        "protocol",
        "status",
        "reason",
        "error_code",
        "outcome_certainty",
        "retry_policy",
        "raw_state",
        "agent_id",
        "created_at",
        "updated_at",
    )

    def __init__(self, rows: Any = (), *, operator: bool, selectable: bool | None = None) -> None:
        self.operator = operator
        # ``Task.is_cancellable`` per (protocol, raw state): a small vocabulary.
        self._cancellable: dict[tuple[str, str], bool] = {}
        selectable = operator if selectable is None else selectable
        super().__init__(rows, exclude=() if selectable else ("pick",))

    def row_attrs(self, task: Task) -> dict[str, Any]:
        return {"id": f"task-row-{task.pk}"}

    def protocol_query(self, task: Task) -> str:
        return f"?protocol={task.protocol}"

    def cancellable(self, task: Task) -> bool:
        """``task.is_cancellable``, worked out once per protocol and raw state per table."""
        key = (task.protocol, task.raw_state)
        found = self._cancellable.get(key)
        if found is None:
            found = self._cancellable[key] = task.is_cancellable
        return found

    def can_pick(self, task: Task) -> bool:
        return self.cancellable(task)

    def pick_value(self, task: Task) -> str:
        return f"{task.protocol}:{task.task_id}"

    def pick_label(self, task: Task) -> str:
        return self.gettext("Select %(id)s") % {"id": task.task_id}

    def render_protocol(self, value: str, task: Task) -> SafeString:
        return format_html("{}", task.get_protocol_display())

    def render_reason(self, value: tuple[str, str], task: Task) -> SafeString:
        """The reason, its words on hover; the error code beside it when there is one."""
        reason, code = value
        if not reason and not code:
            return format_html('<span class="muted">{}</span>', "—")
        if not code:
            return format_html('<span title="{}">{}</span>', i18n.reason_words(reason), reason)
        return format_html(
            '<span title="{}">{}</span> <code class="small error-code" title="{}">{}</code>',
            i18n.reason_words(reason),
            reason or "",
            i18n.error_code_words(code),
            code,
        )

    def render_certainty(self, value: tuple[str, str], task: Task) -> SafeString:
        certainty, policy = value
        return format_html(
            '<span title="{}; {}">{} · {}</span>',
            i18n.certainty_words(certainty),
            i18n.retry_words(policy),
            certainty,
            policy,
        )


class MessageTable(Table):
    """Messages: the raw envelope state and stop reason beside the status."""

    message_id = Column(_("Message"), render="render_message_id")
    type = CodeColumn(_("Type"), cache=True)
    state = RawColumn(_("State"))
    stop_reason = RawColumn(_("Stop reason"))
    status = Column(_("Status"), accessor=("status", "source"), render="render_status", cache=True)
    sender = CodeColumn(_("Sender"), length=20)
    task = Column(_("Task"), accessor="", render="render_task")
    body = Column(_("Body"), css_class="body-cell", render="render_body")
    created_at = AgeColumn(_("Created"), sort_key="created")

    empty_text = _("No messages match these filters.")
    fields = (
        "message_id",
        "type",
        "state",
        "stop_reason",
        "status",
        "source",
        "sender",
        "conversation_id",
        "body",
        "created_at",
        "task__task_id",
        "task__protocol",
    )

    def render_task(self, value: Any, m: Message) -> SafeString:
        task = m.task
        if task is None:
            return format_html(
                '<span class="muted" title="{}">{}</span>',
                self.gettext("conversation %(id)s") % {"id": m.conversation_id},
                self.gettext("not mirrored"),
            )
        detail = url_for(self, "tasks:detail")(task.task_id, protocol=task.protocol)
        return short_id(task.task_id, 24, f"{detail}#m-{m.pk}", self.gettext)

    def render_status(self, value: tuple[str, str], m: Message) -> SafeString:
        """An A2A history message has no outcome of its own: a neutral entry, not a badge."""
        status, source = value
        if source == Message.Source.A2A:
            return format_html(
                '<span class="pill history" title="{}">{}</span>',
                self.gettext("An A2A history message: part of the conversation, not an outcome"),
                self.gettext("history"),
            )
        return badge(status)

    def render_message_id(self, value: str, m: Message) -> SafeString:
        return short_id(value, 24, tr=self.gettext)

    def render_body(self, value: str, m: Message) -> SafeString:
        return format_html("{}", truncate(value, 80))


# The CSV exports: the lists' columns as raw values (times in UTC ISO 8601); the header
# row names each column by its msgid, the machine name (``core.exports``).
TASK_EXPORT = (
    # Translators: a CSV header is a column's machine name; keep it, e.g. "任务 ID (task_id)".
    ExportColumn(pgettext_lazy("CSV header", "task_id")),
    ExportColumn(pgettext_lazy("CSV header", "protocol")),
    ExportColumn(pgettext_lazy("CSV header", "status")),
    ExportColumn(pgettext_lazy("CSV header", "reason")),
    ExportColumn(pgettext_lazy("CSV header", "outcome_certainty")),
    ExportColumn(pgettext_lazy("CSV header", "retry_policy")),
    ExportColumn(pgettext_lazy("CSV header", "raw_state")),
    ExportColumn(pgettext_lazy("CSV header", "agent_id")),
    ExportColumn(pgettext_lazy("CSV header", "created_at")),
    ExportColumn(pgettext_lazy("CSV header", "updated_at")),
)
MESSAGE_EXPORT = (
    ExportColumn(pgettext_lazy("CSV header", "message_id")),
    ExportColumn(pgettext_lazy("CSV header", "type")),
    ExportColumn(pgettext_lazy("CSV header", "state")),
    ExportColumn(pgettext_lazy("CSV header", "stop_reason")),
    ExportColumn(pgettext_lazy("CSV header", "status")),
    ExportColumn(pgettext_lazy("CSV header", "sender")),
    ExportColumn(pgettext_lazy("CSV header", "task_id"), "task.task_id"),
    ExportColumn(pgettext_lazy("CSV header", "task_protocol"), "task.protocol"),
    ExportColumn(pgettext_lazy("CSV header", "conversation_id")),
    ExportColumn(pgettext_lazy("CSV header", "body")),
    ExportColumn(pgettext_lazy("CSV header", "created_at")),
)

# The names the list views read (and the sorts they page on).
COLUMNS = TaskTable.fields
MESSAGE_COLUMNS = MessageTable.fields
