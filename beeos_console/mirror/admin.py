from __future__ import annotations

from django.contrib import admin

from beeos_console.core.admin import ReadOnlyAdmin
from beeos_console.mirror.models import StatusCount


@admin.register(StatusCount)
class StatusCountAdmin(ReadOnlyAdmin):
    list_display = ("kind", "status", "hour", "count")
    list_filter = ("kind",)
