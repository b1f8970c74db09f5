"""Admin pages for console tables: read-only, since every write goes through a service."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest
from django.utils.translation import gettext_lazy as _

from beeos_console.core import tokens
from beeos_console.core.models import ApiToken


class ReadOnlyAdmin(admin.ModelAdmin):
    """Console rows are written only by services: the admin shows, never edits."""

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


@admin.register(ApiToken)
class ApiTokenAdmin(ReadOnlyAdmin):
    """Tokens are issued by `manage.py create_api_token`; the admin can only revoke."""

    list_display = (
        "prefix",
        "user",
        "name",
        "created_at",
        "expires_at",
        "last_used_at",
        "revoked_at",
    )
    actions = ["revoke"]

    @admin.action(description=_("Revoke the selected tokens"))
    def revoke(self, request: HttpRequest, queryset: Any) -> None:
        for token in queryset.filter(revoked_at__isnull=True):
            tokens.revoke(token)
