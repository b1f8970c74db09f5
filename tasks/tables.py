"""The task and message list tables, rendered in Python (see ``operations/rows.py``).

``TaskRows.row`` also builds the row that replaces a list row in place after
an inline cancel (``cancel_views.cancel_task_view``), so the list and the
updated row cannot drift apart. Every value is escaped.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass, field
from html import escape

from django.utils import timezone
from django.utils.safestring import SafeString, mark_safe

from beeos_console.mirror import cells
from tasks.models import Message, Task

HEADERS = (
    "Task",
    "Status",
    "Raw state",
    "Protocol",
    "Reason",
    "Certainty · retry",
    "Agent",
    "Age",
    "Updated",
)
EMPTY = "No tasks match these filters."
# The columns the table reads (and the sorts page on): the list loads only these.
COLUMNS = (
    "task_id",
    "protocol",
    "status",
    "reason",
    "outcome_certainty",
    "retry_policy",
    "raw_state",
    "agent_id",
    "created_at",
    "updated_at",
)


@dataclass
class TaskRows:
    """How rows look for one viewer: ``selectable`` (bulk checkboxes), ``operator`` (cancel)."""

    selectable: bool
    operator: bool
    now: dt.datetime = field(default_factory=timezone.now)
    detail_url: cells.UrlFor = field(default_factory=lambda: cells.UrlFor("tasks:detail"))
    cancel_url: cells.UrlFor = field(default_factory=lambda: cells.UrlFor("tasks:cancel"))

    def table(self, rows: Iterable[Task]) -> SafeString:
        body = [self.row(task) for task in rows]
        return cells.table(HEADERS, body, selectable=self.selectable, empty=EMPTY)

    def row(self, task: Task, *, extra_attrs: str = "") -> SafeString:
        """One ``<tr>``; ``extra_attrs`` is trusted markup (e.g. an htmx out-of-band swap)."""
        return mark_safe(f'<tr id="task-row-{task.pk}"{extra_attrs}>{self.cells(task)}</tr>')

    def cells(self, task: Task) -> str:
        task_id, protocol = task.task_id, escape(task.protocol)
        cancellable = task.is_cancellable
        cols = []
        if self.selectable:
            pick = ""
            if cancellable:
                pick = (
                    f'<input type="checkbox" name="pick" value="{protocol}:{escape(task_id)}"'
                    f' form="bulk-form" aria-label="Select {escape(task_id)}">'
                )
            cols.append(f"<td>{pick}</td>")
        detail = escape(self.detail_url(task_id))
        cols.append(
            f'<td><a href="{detail}?protocol={protocol}">'
            f"<code>{escape(cells.truncate(task_id, 30))}</code></a></td>"
        )
        cols.append(f"<td>{cells.badge(task.status)}</td>")
        cols.append(f"<td>{cells.raw(task.raw_state)}</td>")
        cols.append(f"<td>{escape(str(task.get_protocol_display()))}</td>")
        cols.append(f"<td>{escape(task.reason or '—')}</td>")
        cols.append(
            f'<td class="small">{escape(task.outcome_certainty)} · {escape(task.retry_policy)}</td>'
        )
        agent = cells.filter_link("agent_id", task.agent_id, title="Only this agent", length=20)
        cols.append(f"<td>{agent}</td>")
        cols.append(f"<td>{cells.age(task.created_at, self.now)}</td>")
        cancel = ""
        if cancellable and self.operator:
            cancel_url = escape(self.cancel_url(task_id))
            cancel = (
                f' <a class="small" href="{detail}?protocol={protocol}#cancel"'
                f' hx-get="{cancel_url}?protocol={protocol}&amp;row=1" hx-target="closest tr"'
                ' hx-swap="afterend" title="Cancel this task">Cancel…</a>'
            )
        cols.append(f"<td>{cells.age(task.updated_at, self.now)}{cancel}</td>")
        return "".join(cols)


MESSAGE_HEADERS = (
    "Message",
    "Type",
    "State",
    "Stop reason",
    "Status",
    "Sender",
    "Task",
    "Body",
    "Created",
)
NO_MESSAGES = "No messages match these filters."
MESSAGE_COLUMNS = (
    "message_id",
    "type",
    "state",
    "stop_reason",
    "status",
    "sender",
    "conversation_id",
    "body",
    "created_at",
    "task__task_id",
    "task__protocol",
)


def message_table(rows: Iterable[Message]) -> SafeString:
    """The message list: raw envelope state and stop reason beside the status."""
    detail_url = cells.UrlFor("tasks:detail")
    now = timezone.now()
    body = [message_row(m, detail_url, now) for m in rows]
    return cells.table(MESSAGE_HEADERS, body, selectable=False, empty=NO_MESSAGES)


def message_row(m: Message, detail_url: cells.UrlFor, now: dt.datetime) -> str:
    task = m.task
    if task is not None:
        href = f"{detail_url(task.task_id)}?protocol={task.protocol}#m-{m.pk}"
        task_cell = (
            f'<a href="{escape(href)}"><code>{escape(cells.truncate(task.task_id, 24))}</code></a>'
        )
    else:
        task_cell = (
            f'<span class="muted" title="conversation {escape(m.conversation_id)}">'
            "not mirrored</span>"
        )
    return (
        f"<tr><td><code>{escape(cells.truncate(m.message_id, 24))}</code></td>"
        f"<td><code>{escape(m.type)}</code></td>"
        f"<td>{cells.raw(m.state)}</td>"
        f"<td>{cells.raw(m.stop_reason)}</td>"
        f"<td>{cells.badge(m.status)}</td>"
        f"<td><code>{escape(cells.truncate(m.sender, 20))}</code></td>"
        f"<td>{task_cell}</td>"
        f'<td class="body-cell">{escape(cells.truncate(m.body, 80))}</td>'
        f"<td>{cells.age(m.created_at, now)}</td></tr>"
    )
