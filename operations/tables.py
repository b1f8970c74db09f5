"""The runtime operations list table (``beeos_console.core.tables``): declared columns.

Every internal value stays beside the display status. Every value is escaped.
"""

from __future__ import annotations

from typing import Any

from django.utils.html import format_html
from django.utils.safestring import SafeString
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy

from beeos_console.core.exports import ExportColumn
from beeos_console.core.tables import Column, SelectColumn, Table, truncate
from beeos_console.mirror import i18n
from beeos_console.mirror.columns import AgeColumn, FilterLinkColumn, IdColumn, RawColumn, badge
from operations.models import RuntimeOperation


class OperationColumn(IdColumn):
    """The operation id, linked, with its method under it."""

    def parts(self, value: Any, row: Any, table: Table) -> tuple[str, ...]:
        fmt, *args = super().parts(value, row, table)
        return (fmt + '<br><code class="small">{}</code>', *args, row.method)


class OperationTable(Table):
    """Operations for one viewer: ``exclude=("pick",)`` without bulk checkboxes."""

    pick = SelectColumn(value="pick_value", enabled="can_pick", label="pick_label")
    operation_id = OperationColumn(_("Operation · method"), url="operations:detail", length=22)
    status = Column(_("Status"), accessor=("status", "reason"), render="render_status", cache=True)
    raw_status = RawColumn(_("Raw status"))
    effect_state = RawColumn("effectState")
    projection_state = RawColumn(_("Projection"))
    error_code = Column(
        _("Error code · retryMode"),
        accessor=("error_code", "error_retry_mode"),
        render="render_error",
        cache=True,
    )
    retry_policy = Column(
        _("Retry policy"),
        accessor=("retry_policy", "outcome_certainty"),
        css_class="small",
        render="render_retry",
        cache=True,
    )
    instance_id = FilterLinkColumn(
        _("Instance"), param="instance_id", title=_("Only this instance: {value}"), length=14
    )
    created_at = AgeColumn(_("Age"), sort_key="created")

    empty_text = _("No runtime operations match these filters.")
    # Every cell but the age reads only ``fields`` (``core.tables.Table.memo_rows``).
    memo_rows = True
    # The columns the table reads (and the sorts page on): the list loads only these.
    fields = (
        "operation_id",
        "method",
        "status",
        "reason",
        "outcome_certainty",
        "retry_policy",
        "raw_status",
        "effect_state",
        "projection_state",
        "error_code",
        "error_retry_mode",
        "instance_id",
        "cancel_requested_at",
        "cancel_requested_by",
        "created_at",
        "updated_at",
    )

    def __init__(self, rows: Any = (), *, selectable: bool) -> None:
        super().__init__(rows, exclude=() if selectable else ("pick",))

    def can_pick(self, op: RuntimeOperation) -> bool:
        return op.is_cancellable and not op.has_cancel_request

    def pick_value(self, op: RuntimeOperation) -> str:
        return op.operation_id

    def pick_label(self, op: RuntimeOperation) -> str:
        return self.gettext("Select %(id)s") % {"id": op.operation_id}

    def render_status(self, value: tuple[str, str], op: RuntimeOperation) -> SafeString:
        status, reason = value
        if not reason:
            return badge(status)
        return format_html(
            '{}<br><span class="small" title="{}">{}</span>',
            badge(status),
            i18n.reason_words(reason),
            truncate(reason, 26),
        )

    def render_error(self, value: tuple[str, str], op: RuntimeOperation) -> SafeString:
        code, retry_mode = value
        if not code:
            return format_html('<span class="muted">{}</span>', "—")
        return format_html(
            '<code class="small" title="{}">{}</code><br><code class="small">{}</code>',
            i18n.error_code_words(code),
            code,
            retry_mode or "—",
        )

    def render_retry(self, value: tuple[str, str], op: RuntimeOperation) -> SafeString:
        retry_policy, certainty = value
        title = f"{i18n.retry_words(retry_policy)}; {i18n.certainty_words(certainty)}"
        if certainty == "uncertain":
            return format_html(
                '<span title="{}">{}<br><strong>uncertain</strong></span>', title, retry_policy
            )
        return format_html('<span title="{}">{}</span>', title, retry_policy)


# The CSV export: the list's columns as raw values (times in UTC ISO 8601); the header row
# names each column by its msgid, the machine name (``core.exports``).
OPERATION_EXPORT = (
    # Translators: a CSV header is a column's machine name; keep it, e.g. "操作 ID (operation_id)".
    ExportColumn(pgettext_lazy("CSV header", "operation_id")),
    ExportColumn(pgettext_lazy("CSV header", "method")),
    ExportColumn(pgettext_lazy("CSV header", "status")),
    ExportColumn(pgettext_lazy("CSV header", "reason")),
    ExportColumn(pgettext_lazy("CSV header", "outcome_certainty")),
    ExportColumn(pgettext_lazy("CSV header", "retry_policy")),
    ExportColumn(pgettext_lazy("CSV header", "raw_status")),
    ExportColumn(pgettext_lazy("CSV header", "effect_state")),
    ExportColumn(pgettext_lazy("CSV header", "projection_state")),
    ExportColumn(pgettext_lazy("CSV header", "error_code")),
    ExportColumn(pgettext_lazy("CSV header", "error_retry_mode")),
    ExportColumn(pgettext_lazy("CSV header", "instance_id")),
    ExportColumn(pgettext_lazy("CSV header", "cancel_requested_at")),
    ExportColumn(pgettext_lazy("CSV header", "cancel_requested_by")),
    ExportColumn(pgettext_lazy("CSV header", "created_at")),
    ExportColumn(pgettext_lazy("CSV header", "updated_at")),
)

COLUMNS = OperationTable.fields
