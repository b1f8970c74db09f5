"""The audit log pages (admin role)."""

from __future__ import annotations

from django.db.models import QuerySet

from . import roles
from .audit_filters import AuditEntryFilterSet
from .listing import KeysetListView
from .models import AuditEntry
from .permissions import RoleRequiredMixin


class AuditLogView(RoleRequiredMixin, KeysetListView):
    required_role = roles.ADMIN
    filterset_class = AuditEntryFilterSet
    rows_template = "audit/_rows.html"
    title = "Audit log"
    sort_fields = {"at": "at"}
    default_sort = "at"
    open_filters = ()

    def get_queryset(self) -> QuerySet:
        return AuditEntry.objects.all()
