from __future__ import annotations

from django.contrib import admin

from beeos_console.core.admin import ReadOnlyAdmin
from beeos_console.upstream.models import SyncCursor


@admin.register(SyncCursor)
class SyncCursorAdmin(ReadOnlyAdmin):
    list_display = ("name", "value", "updated_at")
