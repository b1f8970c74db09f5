"""Saved views in the API: ``GET /api/v1/saved-views/`` and ``?view=<id>`` on every list."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from rest_framework import mixins, serializers, viewsets

from beeos_console.core.api import IsSupport
from beeos_console.savedviews.models import SavedView


class SavedViewSerializer(serializers.ModelSerializer):
    owner = serializers.CharField(source="owner.get_username", read_only=True)

    class Meta:
        model = SavedView
        fields = ("id", "name", "kind", "query", "shared", "owner", "created_at", "updated_at")


class SavedViewViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """The saved views you may use (your own and the shared ones); `?kind=` one list's.

    Apply one to a list with `?view=<id>` (e.g. `GET /api/v1/tasks/?view=12`).
    """

    permission_classes = [IsSupport]
    serializer_class = SavedViewSerializer
    filter_backends: list[Any] = []
    pagination_class = None

    def get_queryset(self) -> QuerySet:
        views = SavedView.objects.visible_to(self.request.user).select_related("owner")
        kind = self.request.query_params.get("kind")
        return views.filter(kind=kind) if kind else views
