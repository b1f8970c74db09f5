"""REST API for runtime operations and their events."""

from __future__ import annotations

import functools

import django_filters
from django.db.models import QuerySet
from drf_spectacular.utils import extend_schema
from rest_framework import viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from beeos_console.cancels import api as cancel_api
from beeos_console.core.api import IdLookupMixin, IsOperator, IsSupport, KeysetPagination
from operations.api.serializers import RuntimeOperationEventSerializer, RuntimeOperationSerializer
from operations.filtersets import RuntimeOperationFilterSet
from operations.models import RuntimeOperation, RuntimeOperationEvent
from operations.services.cancel import cancel_operation
from operations.views import OperationListView


class RuntimeOperationViewSet(IdLookupMixin, viewsets.ReadOnlyModelViewSet):
    saved_view_kind = "operations"  # ?view=<id>: a saved view of this list
    permission_classes = [IsSupport]
    filterset_class = RuntimeOperationFilterSet
    pagination_class = KeysetPagination
    serializer_class = RuntimeOperationSerializer
    # The HTML list's sorts, "longest stuck first" (?sort=stuck) included, and its one
    # rule for them (sort_order): the page, its CSV export and this list order alike.
    sort_fields = {**OperationListView.sort_fields, **OperationListView.ascending_sorts}
    sort_notes = OperationListView.sort_notes
    lookup_field = "operation_id"
    suffix_detail_handlers = ("retrieve_cancel_suffix",)

    def sort_order(self, sort: str) -> tuple[str, bool]:
        return OperationListView().sort_order(sort)

    def get_queryset(self) -> QuerySet:
        return RuntimeOperation.objects.defer("raw_payload")

    @cancel_api.CANCEL_SCHEMA
    @action(detail=True, methods=["post"], permission_classes=[IsOperator])
    def cancel(self, request: Request, operation_id: str) -> Response:
        """Cancel a queued or running operation (operator role); refused from commit on."""
        op = self.get_object()
        cancel = functools.partial(cancel_operation, op.operation_id)
        return cancel_api.run(request, cancel, RuntimeOperationSerializer)

    @extend_schema(exclude=True)
    @cancel.mapping.get
    def retrieve_cancel_suffix(self, request: Request, operation_id: str) -> Response:
        """GET `operations/<id>/cancel`: the operation whose id ends in `/cancel`."""
        return self.retrieve_ending_in(request, "cancel")


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
