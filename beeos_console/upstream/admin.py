from __future__ import annotations

from django.contrib import admin

from beeos_console.core.admin import ReadOnlyAdmin
from beeos_console.upstream.models import SyncCursor, WebhookInboxEvent


@admin.register(SyncCursor)
class SyncCursorAdmin(ReadOnlyAdmin):
    list_display = ("name", "value", "updated_at")


@admin.register(WebhookInboxEvent)
class WebhookInboxEventAdmin(ReadOnlyAdmin):
    """The console's own page is /webhooks/ (filters, raw event, retry); this is the raw table."""

    list_display = ("id", "received_at", "kind", "task_id", "event_status", "status", "result")
    search_fields = ("=task_id",)
    show_full_result_count = False
