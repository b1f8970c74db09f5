from __future__ import annotations

from django.contrib import admin

from beeos_console.core.admin import ReadOnlyAdmin
from beeos_console.projection.models import ProjectionJob


@admin.register(ProjectionJob)
class ProjectionJobAdmin(ReadOnlyAdmin):
    list_display = ("pk", "kind", "state", "requested_by", "created_at", "finished_at")
    list_filter = ("kind", "state")
