"""Task and message pages: thin views over FilterSets, selectors and templates."""

from __future__ import annotations

from django.db.models import QuerySet
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render

from beeos_console.auditlog.models import AuditEntry
from beeos_console.cancels.engine import new_idempotency_key
from beeos_console.cancels.models import CancelRequest
from beeos_console.core import roles
from beeos_console.core.listing import KeysetListView
from beeos_console.core.permissions import RoleRequiredMixin, role_required
from tasks.filtersets import TASK_SORTS, MessageFilterSet, TaskFilterSet
from tasks.tables import COLUMNS, MESSAGE_COLUMNS, TaskRows, message_table

from . import selectors, services
from .models import Message, Task

TIMELINE_PAGE = 100
TRAIL_ROWS = 50


class TaskListView(RoleRequiredMixin, KeysetListView):
    filterset_class = TaskFilterSet
    title = "Tasks"
    sort_fields = TASK_SORTS
    bulk_kind = "task"

    def get_queryset(self) -> QuerySet:
        return Task.objects.only(*COLUMNS)

    def render_rows(self, rows: list[Task]) -> str:
        operator = roles.has_role(self.request.user, roles.OPERATOR)
        return TaskRows(selectable=operator, operator=operator).table(rows)


class MessageListView(RoleRequiredMixin, KeysetListView):
    filterset_class = MessageFilterSet
    title = "Messages"
    open_filters = ("state",)

    def get_queryset(self) -> QuerySet:
        return Message.objects.select_related("task").only(*MESSAGE_COLUMNS)

    def render_rows(self, rows: list[Message]) -> str:
        return message_table(rows)


@role_required(roles.SUPPORT)
def task_detail(request: HttpRequest, task_id: str) -> HttpResponse:
    candidates = selectors.tasks_by_id(task_id, protocol=request.GET.get("protocol"))
    if not candidates:
        raise Http404("No task with this id is mirrored.")
    if len(candidates) > 1:
        return render(request, "tasks/choose.html", {"task_id": task_id, "tasks": candidates})
    task = candidates[0]
    projection = task.expected_projection
    timeline = selectors.timeline(task, before=request.GET.get("before"), limit=TIMELINE_PAGE)
    context = {
        "task": task,
        "projection": projection,
        "drift": task.projection_drift(projection),
        "timeline": timeline,
        "deciding_reply": selectors.deciding_reply(task),
        "artifacts": list(task.artifacts.all()),
        "cancel_refusal": services.cancel_refusal(task),
        "idempotency_key": new_idempotency_key(),
        "last_cancel": CancelRequest.objects.filter(
            object_kind="task", protocol=task.protocol, object_id=task.task_id
        )
        .order_by("-created_at")
        .first(),
        "trail": list(
            AuditEntry.objects.filter(object_kind="task", object_id=task.task_id)[:TRAIL_ROWS]
        ),
    }
    if getattr(request, "htmx", None) and request.htmx.target == "timeline":
        return render(request, "tasks/_timeline.html", context)
    return render(request, "tasks/detail.html", context)
