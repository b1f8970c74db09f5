from django.contrib import admin

from beeos_console.core.admin import ReadOnlyAdmin

from .models import RuntimeOperation, RuntimeOperationEvent


@admin.register(RuntimeOperation)
class RuntimeOperationAdmin(ReadOnlyAdmin):
    list_display = (
        "operation_id",
        "method",
        "status",
        "raw_status",
        "effect_state",
        "projection_state",
        "error_code",
        "created_at",
    )
    search_fields = ("=operation_id", "=instance_id")
    show_full_result_count = False


@admin.register(RuntimeOperationEvent)
class RuntimeOperationEventAdmin(ReadOnlyAdmin):
    list_display = ("operation_id_raw", "event_id", "type", "sequence", "recorded_at", "outcome")
    raw_id_fields = ("operation",)
    show_full_result_count = False
