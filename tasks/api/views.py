"""REST API for tasks and messages: the HTML pages' FilterSets, keyset pages, JSON."""

from __future__ import annotations

import functools

from django.db.models import QuerySet
from django.shortcuts import get_object_or_404
from django.utils.translation import gettext
from drf_spectacular.utils import extend_schema
from rest_framework import viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from beeos_console.cancels import api as cancel_api
from beeos_console.core.api import IdLookupMixin, IsOperator, IsSupport, KeysetPagination
from tasks.api.serializers import MessageSerializer, TaskDetailSerializer, TaskSerializer
from tasks.filtersets import MessageFilterSet, TaskFilterSet
from tasks.models import Message, Task
from tasks.services.cancel import cancel_task
from tasks.views import TaskListView


class TaskViewSet(IdLookupMixin, viewsets.ReadOnlyModelViewSet):
    """Mirrored tasks. Detail by task id (percent-encoded, `%2F` for `/`); add `?protocol=`
    when the id exists twice."""

    saved_view_kind = "tasks"  # ?view=<id>: a saved view of this list
    permission_classes = [IsSupport]
    filterset_class = TaskFilterSet
    pagination_class = KeysetPagination
    # The HTML list's sorts, "longest stuck first" (?sort=stuck) included, and its one
    # rule for them (sort_order): the page, its CSV export and this list order alike.
    sort_fields = {**TaskListView.sort_fields, **TaskListView.ascending_sorts}
    sort_notes = TaskListView.sort_notes
    lookup_field = "task_id"
    suffix_detail_handlers = ("retrieve_cancel_suffix",)

    def sort_order(self, sort: str) -> tuple[str, bool]:
        return TaskListView().sort_order(sort)

    def get_queryset(self) -> QuerySet:
        if self.action == "retrieve":
            return Task.objects.prefetch_related("artifacts")
        return Task.objects.defer("raw_payload", "result", "metadata")

    def get_serializer_class(self) -> type:
        return TaskDetailSerializer if self.action == "retrieve" else TaskSerializer

    @cancel_api.CANCEL_SCHEMA
    @action(detail=True, methods=["post"], permission_classes=[IsOperator])
    def cancel(self, request: Request, task_id: str) -> Response:
        """Cancel a queued or processing task (operator role). Refusals say why."""
        task = self.get_object()
        cancel = functools.partial(cancel_task, task.protocol, task.task_id)
        return cancel_api.run(request, cancel, TaskSerializer)

    @extend_schema(exclude=True)
    @cancel.mapping.get
    def retrieve_cancel_suffix(self, request: Request, task_id: str) -> Response:
        """GET `tasks/<id>/cancel`: the task whose id ends in `/cancel`."""
        return self.retrieve_ending_in(request, "cancel")

    def get_object(self) -> Task:
        queryset = self.get_queryset().filter(task_id=self.kwargs["task_id"])
        protocol = self.request.query_params.get("protocol")
        if protocol:
            return get_object_or_404(queryset, protocol=protocol)
        found = list(queryset[:2])
        if len(found) > 1:
            raise ValidationError(
                {"protocol": [gettext("This id exists under several protocols; add ?protocol=.")]}
            )
        if not found:
            get_object_or_404(queryset)
        return found[0]


class MessageViewSet(IdLookupMixin, viewsets.ReadOnlyModelViewSet):
    saved_view_kind = "messages"  # ?view=<id>: a saved view of this list
    permission_classes = [IsSupport]
    filterset_class = MessageFilterSet
    pagination_class = KeysetPagination
    serializer_class = MessageSerializer
    lookup_field = "message_id"

    def get_queryset(self) -> QuerySet:
        return Message.objects.select_related("task").only(
            *(f.name for f in Message._meta.fields if f.name not in ("raw_payload", "content")),
            "task__task_id",
        )
