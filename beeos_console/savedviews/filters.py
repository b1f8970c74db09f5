"""``?view=<id>`` on every API list: the REST framework's filter backend (settings)."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from django.utils.translation import gettext
from django_filters.rest_framework import DjangoFilterBackend
from rest_framework.exceptions import ValidationError

from beeos_console.savedviews.models import SavedView


class SavedViewFilterBackend(DjangoFilterBackend):
    """The FilterSet backend, plus ``?view=<id>``: the saved view's filters, under any given.

    A list viewset names its list with ``saved_view_kind``; a view of another list,
    or one that is neither the caller's nor shared, is a 400.
    """

    def get_filterset_kwargs(self, request: Any, queryset: QuerySet, view: Any) -> dict[str, Any]:
        kwargs = super().get_filterset_kwargs(request, queryset, view)
        ref = request.query_params.get("view")
        if not ref:
            return kwargs
        kind = getattr(view, "saved_view_kind", "")
        saved = None
        if ref.isdigit() and len(ref) < 19:
            saved = SavedView.objects.visible_to(request.user).filter(pk=int(ref)).first()
        if saved is None:
            raise ValidationError(
                {"view": [gettext("No saved view with this id is yours or shared.")]}
            )
        if saved.kind != kind:
            raise ValidationError(
                {
                    "view": [
                        gettext("Saved view %(id)s is a view of %(kind)s.")
                        % {"id": saved.pk, "kind": saved.kind}
                    ]
                }
            )
        data = saved.params().copy()
        for name in request.query_params:
            if name != "view":
                data.setlist(name, request.query_params.getlist(name))
        kwargs["data"] = data
        # The view's sort too: the keyset pages read it here (``core.api.KeysetPagination``).
        view.list_params = data
        return kwargs
