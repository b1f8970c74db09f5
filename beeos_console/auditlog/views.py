"""The audit log pages (admin role): the list and its CSV export."""

from __future__ import annotations

import json
from typing import Any

from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.urls import reverse

from beeos_console.auditlog.filtersets import AuditEntryFilterSet
from beeos_console.auditlog.forms import AuditEntryFilterForm
from beeos_console.auditlog.models import AuditEntry
from beeos_console.auditlog.tables import AuditEntryTable
from beeos_console.core import roles
from beeos_console.core.exports import csv_writer
from beeos_console.core.listing import KeysetListView
from beeos_console.core.permissions import RoleRequiredMixin, role_required


class AuditLogView(RoleRequiredMixin, KeysetListView):
    required_role = roles.ADMIN
    filterset_class = AuditEntryFilterSet
    form_class = AuditEntryFilterForm
    table_class = AuditEntryTable
    title = "Audit log"
    sort_fields = {"at": "at"}
    default_sort = "at"

    def get_queryset(self) -> QuerySet:
        return AuditEntry.objects.all()

    def get_context_data(self, **context: Any) -> dict[str, Any]:
        query = self.filter_query()
        context["export_url"] = f"{reverse('audit:log-csv')}{'?' + query if query else ''}"
        return context


class _Echo:
    """A file-like object whose write returns the line: the CSV writer feeds a stream."""

    def write(self, value: str) -> str:
        return value


CSV_HEADER = (
    "at",
    "actor",
    "actor_kind",
    "action",
    "object_kind",
    "object_id",
    "reason",
    "before",
    "after",
    "detail",
)


@role_required(roles.ADMIN)
def audit_log_csv(request: HttpRequest) -> HttpResponse:
    """The audit log under the current filter, as CSV, streamed (any size, flat memory)."""
    filterset = AuditEntryFilterSet(request.GET, queryset=AuditEntry.objects.all())
    if not filterset.is_valid():
        return HttpResponse(
            f"These filters could not be applied: {dict(filterset.errors)}",
            status=400,
            content_type="text/plain",
        )
    writer = csv_writer(_Echo())

    def rows() -> Any:
        yield writer.writerow(CSV_HEADER)
        for e in filterset.qs.order_by("-at", "-id").iterator(chunk_size=2000):
            yield writer.writerow(
                [
                    e.at.isoformat(),
                    e.actor,
                    e.actor_kind,
                    e.action,
                    e.object_kind,
                    e.object_id,
                    e.reason,
                    json.dumps(e.before, sort_keys=True),
                    json.dumps(e.after, sort_keys=True),
                    json.dumps(e.detail, sort_keys=True, default=str),
                ]
            )

    response = StreamingHttpResponse(rows(), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = 'attachment; filename="beeos-console-audit-log.csv"'
    return response
