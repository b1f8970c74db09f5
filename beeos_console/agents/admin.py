from __future__ import annotations

from django.contrib import admin

from beeos_console.agents.models import AgentCard, AgentScorecard
from beeos_console.core.admin import ReadOnlyAdmin


@admin.register(AgentCard)
class AgentCardAdmin(ReadOnlyAdmin):
    list_display = ("agent_id", "outcome", "fetched_at", "consecutive_failures", "last_success_at")
    list_filter = ("outcome",)
    search_fields = ("agent_id",)


@admin.register(AgentScorecard)
class AgentScorecardAdmin(ReadOnlyAdmin):
    list_display = ("agent_id", "worst_line", "worst_level", "worst_count", "computed_at")
    list_filter = ("worst_line", "worst_level")
    search_fields = ("agent_id",)
