from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from beeos_console.auditlog.models import AuditEntry
from beeos_console.core.admin import ReadOnlyAdmin


@admin.register(AuditEntry)
class AuditEntryAdmin(ReadOnlyAdmin):
    list_display = ("at", "actor", "action", "object_kind", "object_id")
    list_filter = ("action", "object_kind", "actor_kind")
    search_fields = ("object_id", "actor")
    show_full_result_count = False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
