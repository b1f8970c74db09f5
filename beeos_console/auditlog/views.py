"""The audit log pages (admin role): the list and its CSV export."""

from __future__ import annotations

from django.db.models import QuerySet
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy

from beeos_console.auditlog.filtersets import AuditEntryFilterSet
from beeos_console.auditlog.forms import AuditEntryFilterForm
from beeos_console.auditlog.models import AuditEntry
from beeos_console.auditlog.tables import AuditEntryTable
from beeos_console.core import roles
from beeos_console.core.exports import ExportColumn, ListCsvExport, as_json
from beeos_console.core.listing import KeysetListView
from beeos_console.core.permissions import RoleRequiredMixin

# The CSV export (``core.exports.ListCsvExport``): every field, raw (times in UTC ISO 8601).
AUDIT_EXPORT = (
    ExportColumn(pgettext_lazy("CSV header", "at")),
    ExportColumn(pgettext_lazy("CSV header", "actor")),
    ExportColumn(pgettext_lazy("CSV header", "actor_kind")),
    ExportColumn(pgettext_lazy("CSV header", "action")),
    ExportColumn(pgettext_lazy("CSV header", "object_kind")),
    ExportColumn(pgettext_lazy("CSV header", "object_id")),
    ExportColumn(pgettext_lazy("CSV header", "reason")),
    ExportColumn(pgettext_lazy("CSV header", "before"), format=as_json),
    ExportColumn(pgettext_lazy("CSV header", "after"), format=as_json),
    ExportColumn(pgettext_lazy("CSV header", "detail"), format=as_json),
)


class AuditLogView(RoleRequiredMixin, KeysetListView):
    required_role = roles.ADMIN
    filterset_class = AuditEntryFilterSet
    form_class = AuditEntryFilterForm
    table_class = AuditEntryTable
    title = _("Audit log")
    sort_fields = {"at": "at"}
    default_sort = "at"
    export_url_name = "audit:log-csv"
    export_filename = "audit-log"
    export_columns = AUDIT_EXPORT
    saved_view_kind = "audit"

    def get_queryset(self) -> QuerySet:
        return AuditEntry.objects.all()


# The audit log under the current filter, as CSV, streamed (any size, flat memory; admin).
audit_log_csv = ListCsvExport.as_view(list_view=AuditLogView)
