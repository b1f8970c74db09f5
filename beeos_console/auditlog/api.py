"""The audit log over REST (admin role, read-only)."""

from __future__ import annotations

from rest_framework import viewsets

from beeos_console.auditlog.filtersets import AuditEntryFilterSet
from beeos_console.auditlog.models import AuditEntry
from beeos_console.auditlog.serializers import AuditEntrySerializer
from beeos_console.core.api import IsAdmin, KeysetPagination


class AuditEntryViewSet(viewsets.ReadOnlyModelViewSet):
    """The audit log (admin role). Entries are immutable: no write methods exist."""

    saved_view_kind = "audit"  # ?view=<id>: a saved view of this list
    permission_classes = [IsAdmin]
    filterset_class = AuditEntryFilterSet
    pagination_class = KeysetPagination
    serializer_class = AuditEntrySerializer
    queryset = AuditEntry.objects.all()
    sort_fields = {"at": "at"}
    default_sort = "at"
