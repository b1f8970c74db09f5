"""REST API for runtime operations and their events."""

from __future__ import annotations

import django_filters
from django.db.models import QuerySet
from rest_framework import viewsets

from beeos_console.api import IsSupport, KeysetPagination

from .filters import OPERATION_SORTS, RuntimeOperationFilterSet
from .models import RuntimeOperation, RuntimeOperationEvent
from .serializers import RuntimeOperationEventSerializer, RuntimeOperationSerializer


class RuntimeOperationViewSet(viewsets.ReadOnlyModelViewSet):
    permission_classes = [IsSupport]
    filterset_class = RuntimeOperationFilterSet
    pagination_class = KeysetPagination
    serializer_class = RuntimeOperationSerializer
    sort_fields = OPERATION_SORTS
    lookup_field = "operation_id"
    lookup_value_regex = "[^/]+"

    def get_queryset(self) -> QuerySet:
        return RuntimeOperation.objects.defer("raw_payload")


class RuntimeOperationEventFilterSet(django_filters.FilterSet):
    operation = django_filters.CharFilter(field_name="operation_id_raw", max_length=256)
    type = django_filters.CharFilter(max_length=64)

    class Meta:
        model = RuntimeOperationEvent
        fields: list[str] = []


class RuntimeOperationEventViewSet(viewsets.ReadOnlyModelViewSet):
    permission_classes = [IsSupport]
    filterset_class = RuntimeOperationEventFilterSet
    pagination_class = KeysetPagination
    serializer_class = RuntimeOperationEventSerializer
    sort_fields = {"recorded": "recorded_at"}
    default_sort = "recorded"

    def get_queryset(self) -> QuerySet:
        return RuntimeOperationEvent.objects.defer("raw_payload")
