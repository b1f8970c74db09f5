"""Saved view writes beyond create and delete: rename, re-share, replace the filters."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.utils.translation import gettext

from beeos_console.auditlog.services import Actor, record
from beeos_console.core import roles
from beeos_console.core.permissions import deny
from beeos_console.savedviews.models import SavedView, clean_query, may_change, may_share

UPDATE_ACTION = "saved_view.update"


def state_of(view: SavedView) -> dict[str, Any]:
    """What a change can move: the audit entry's before / after."""
    return {"name": view.name, "query": view.query, "shared": view.shared}


def change_view(
    user: Any, pk: int, *, name: str, shared: bool, query: str | None = None
) -> tuple[SavedView, bool]:
    """Rename ``pk``, share or unshare it and, with ``query``, replace its filters.

    ``(view, changed)``; ``SavedView.DoesNotExist`` when ``user`` may not see it.
    Its owner may, or an admin for a shared view (``may_change``); making it
    shared also needs ``may_share``. A shared view's change (shared before or
    after) is audited, like its creation and deletion; the row is locked so two
    editors never lose each other's change unseen.
    """
    with transaction.atomic():
        views = SavedView.objects.visible_to(user).select_related("owner")
        view = views.select_for_update(of=("self",)).get(pk=pk)
        if not may_change(user, view):
            raise PermissionDenied(gettext("Only its owner or an admin may change a shared view."))
        if shared and not view.shared and not may_share(user):
            raise deny(roles.OPERATOR)
        before = state_of(view)
        view.name = name
        view.shared = shared
        if query is not None:
            view.query = clean_query(query)
        after = state_of(view)
        if after == before:
            return view, False
        view.save(update_fields=["name", "shared", "query", "updated_at"])
        if before["shared"] or after["shared"]:
            record(
                Actor.of_user(user),
                UPDATE_ACTION,
                "saved_view",
                str(view.pk),
                before=before,
                after=after,
                detail={"kind": view.kind, "owner": view.owner.get_username()},
            )
    return view, True
