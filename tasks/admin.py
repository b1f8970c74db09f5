from django.contrib import admin

from beeos_console.core.admin import ReadOnlyAdmin

from .models import Artifact, Message, Task, WebhookEvent


@admin.register(Task)
class TaskAdmin(ReadOnlyAdmin):
    list_display = (
        "task_id",
        "protocol",
        "status",
        "raw_state",
        "reason",
        "agent_id",
        "created_at",
    )
    search_fields = ("=task_id", "=context_id")
    show_full_result_count = False


@admin.register(Message)
class MessageAdmin(ReadOnlyAdmin):
    list_display = ("message_id", "type", "state", "stop_reason", "conversation_id", "created_at")
    search_fields = ("=message_id", "=conversation_id")
    raw_id_fields = ("task",)
    show_full_result_count = False


@admin.register(Artifact)
class ArtifactAdmin(ReadOnlyAdmin):
    list_display = ("artifact_id", "name", "task")
    raw_id_fields = ("task",)


@admin.register(WebhookEvent)
class WebhookEventAdmin(ReadOnlyAdmin):
    list_display = ("received_at", "type", "task_id", "status", "final", "scheme")
    search_fields = ("=task_id",)
    show_full_result_count = False
