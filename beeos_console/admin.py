from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from . import tokens
from .models import (
    ApiToken,
    AuditEntry,
    BulkCancel,
    CancelRequest,
    ProjectionJob,
    StatusCount,
    SyncCursor,
)


class MirrorAdmin(admin.ModelAdmin):
    """Mirrored rows are written only by services: the admin shows, never edits."""

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        return [f.name for f in self.model._meta.fields]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        # Viewing needs "change" in old admin versions; saving is still refused
        # because every field is read-only.
        return request.user.is_superuser

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(AuditEntry)
class AuditEntryAdmin(MirrorAdmin):
    list_display = ("at", "actor", "action", "object_kind", "object_id")
    list_filter = ("action", "object_kind", "actor_kind")
    search_fields = ("object_id", "actor")
    show_full_result_count = False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(StatusCount)
class StatusCountAdmin(MirrorAdmin):
    list_display = ("kind", "status", "hour", "count")
    list_filter = ("kind",)


@admin.register(SyncCursor)
class SyncCursorAdmin(MirrorAdmin):
    list_display = ("name", "value", "updated_at")


@admin.register(ApiToken)
class ApiTokenAdmin(MirrorAdmin):
    """Tokens are issued by `manage.py create_api_token`; the admin can only revoke."""

    list_display = ("prefix", "user", "name", "created_at", "revoked_at")
    actions = ["revoke"]

    @admin.action(description="Revoke the selected tokens")
    def revoke(self, request: HttpRequest, queryset: Any) -> None:
        for token in queryset.filter(revoked_at__isnull=True):
            tokens.revoke(token)


@admin.register(CancelRequest)
class CancelRequestAdmin(MirrorAdmin):
    list_display = ("created_at", "object_kind", "object_id", "requested_by", "state", "result")
    list_filter = ("state", "object_kind", "gateway")
    search_fields = ("=object_id", "=idempotency_key")
    show_full_result_count = False


@admin.register(BulkCancel)
class BulkCancelAdmin(MirrorAdmin):
    list_display = ("pk", "object_kind", "requested_by", "state", "done", "total", "created_at")
    list_filter = ("state", "object_kind")


@admin.register(ProjectionJob)
class ProjectionJobAdmin(MirrorAdmin):
    list_display = ("pk", "kind", "state", "requested_by", "created_at", "finished_at")
    list_filter = ("kind", "state")
