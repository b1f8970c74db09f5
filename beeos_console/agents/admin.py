from __future__ import annotations

from django.contrib import admin

from beeos_console.agents.models import AgentCard
from beeos_console.core.admin import ReadOnlyAdmin


@admin.register(AgentCard)
class AgentCardAdmin(ReadOnlyAdmin):
    list_display = ("agent_id", "outcome", "fetched_at", "consecutive_failures", "last_success_at")
    list_filter = ("outcome",)
    search_fields = ("agent_id",)
