from __future__ import annotations

from django.contrib import admin

from beeos_console.core.admin import ReadOnlyAdmin
from beeos_console.mirror.models import AgentCount, StatusCount


@admin.register(StatusCount)
class StatusCountAdmin(ReadOnlyAdmin):
    list_display = ("kind", "status", "hour", "count")
    list_filter = ("kind",)


@admin.register(AgentCount)
class AgentCountAdmin(ReadOnlyAdmin):
    list_display = ("agent_id", "role", "status", "count", "last_activity")
    list_filter = ("role",)
    search_fields = ("agent_id",)
