"""Saved views: a list's filter (its query string) kept under a name, private or shared.

A saved view knows no domain model: only which list it belongs to (``kind``),
the URL name of that list and the role that list needs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import models
from django.db.models import Q, QuerySet
from django.http import QueryDict
from django.utils.translation import gettext_lazy

from beeos_console.core import roles


@dataclass(frozen=True)
class ListKind:
    label: str
    url_name: str
    role: str


# The lists a view can be saved for: the list page's URL name, the role it needs.
KINDS: dict[str, ListKind] = {
    "tasks": ListKind(gettext_lazy("Tasks"), "tasks:list", roles.SUPPORT),
    "messages": ListKind(gettext_lazy("Messages"), "tasks:messages", roles.SUPPORT),
    "operations": ListKind(gettext_lazy("Runtime operations"), "operations:list", roles.SUPPORT),
    "audit": ListKind(gettext_lazy("Audit log"), "audit:log", roles.ADMIN),
}
# Never part of a saved view: the page cursor, auto-refresh, the view parameter itself.
DROPPED_PARAMS = ("after", "before", "refresh", "view")
MAX_QUERY = 4000


def clean_query(query: str) -> str:
    """``query`` without page, refresh and ``view`` parameters, re-encoded."""
    params = QueryDict(query.lstrip("?"), mutable=True)
    for name in DROPPED_PARAMS:
        params.pop(name, None)
    return params.urlencode()


class SavedViewQuerySet(models.QuerySet):
    def visible_to(self, user: Any) -> QuerySet:
        """The user's own views and every shared view, of lists the user may open."""
        if not getattr(user, "is_authenticated", False):
            return self.none()
        kinds = [k for k, kind in KINDS.items() if roles.has_role(user, kind.role)]
        return self.filter(Q(owner=user) | Q(shared=True), kind__in=kinds)


class SavedView(models.Model):
    """A named filter of one list. Private (its owner's) or shared with the whole team."""

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="saved_views"
    )
    name = models.CharField(max_length=100)
    kind = models.CharField(max_length=20, choices=[(k, v.label) for k, v in KINDS.items()])
    query = models.CharField(max_length=MAX_QUERY, blank=True)
    shared = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = SavedViewQuerySet.as_manager()

    class Meta:
        app_label = "console"
        ordering = ("kind", "name", "pk")
        indexes = [models.Index(fields=["kind", "shared"], name="savedview_kind_shared")]

    def __str__(self) -> str:
        return f"{self.name} ({self.kind}{', shared' if self.shared else ''})"

    @property
    def list_kind(self) -> ListKind:
        return KINDS[self.kind]

    def params(self) -> QueryDict:
        return QueryDict(self.query)


def may_change(user: Any, view: SavedView) -> bool:
    """Rename, update, share, unshare or delete a view: its owner; a shared (team) view
    also an admin. Sharing a private view also needs ``may_share``."""
    if view.owner_id == user.pk:
        return True
    return view.shared and roles.has_role(user, roles.ADMIN)


def may_share(user: Any) -> bool:
    return roles.has_role(user, roles.OPERATOR)
