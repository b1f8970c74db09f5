from __future__ import annotations

from django.contrib import admin

from beeos_console.cancels.models import BulkCancel, CancelRequest
from beeos_console.core.admin import ReadOnlyAdmin


@admin.register(CancelRequest)
class CancelRequestAdmin(ReadOnlyAdmin):
    list_display = ("created_at", "object_kind", "object_id", "requested_by", "state", "result")
    list_filter = ("state", "object_kind", "gateway")
    search_fields = ("=object_id", "=idempotency_key")
    show_full_result_count = False


@admin.register(BulkCancel)
class BulkCancelAdmin(ReadOnlyAdmin):
    list_display = ("pk", "object_kind", "requested_by", "state", "done", "total", "created_at")
    list_filter = ("state", "object_kind")
