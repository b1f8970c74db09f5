from django.contrib import admin

from beeos_console.core.admin import ReadOnlyAdmin
from beeos_console.savedviews.models import SavedView


@admin.register(SavedView)
class SavedViewAdmin(ReadOnlyAdmin):
    """Saved views are made and deleted on the console's pages (shared ones audited)."""

    list_display = ("name", "kind", "owner", "shared", "updated_at")
    list_filter = ("kind", "shared")
    search_fields = ("name", "owner__username")
