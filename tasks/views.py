"""Task and message pages: thin views over FilterSets, selectors and templates."""

from __future__ import annotations

from django.contrib import messages
from django.db.models import QuerySet
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext_lazy as _
from django.views.decorators.http import require_http_methods

from beeos_console.auditlog.selectors import audit_trail
from beeos_console.auditlog.services import Actor
from beeos_console.cancels import views as cancel_views
from beeos_console.cancels.engine import InvalidCancel, new_idempotency_key
from beeos_console.cancels.selectors import last_cancel_request
from beeos_console.core import roles
from beeos_console.core.links import object_url
from beeos_console.core.listing import KeysetListView
from beeos_console.core.pagination import BadCursor
from beeos_console.core.permissions import RoleRequiredMixin, role_required
from beeos_console.mirror.attention import attention
from beeos_console.mirror.filtersets import STUCK_SORT, STUCK_SORT_FIELD, STUCK_SORT_NOTE
from tasks.filtersets import TASK_SORTS, MessageFilterSet, TaskFilterSet
from tasks.forms import MessageFilterForm, TaskFilterForm
from tasks.tables import MESSAGE_EXPORT, TASK_EXPORT, MessageTable, TaskTable

from . import selectors
from .models import Message, Task
from .services.cancel import cancel_refusal, cancel_task

TIMELINE_PAGE = 100


class TaskListView(RoleRequiredMixin, KeysetListView):
    filterset_class = TaskFilterSet
    form_class = TaskFilterForm
    table_class = TaskTable
    title = _("Tasks")
    sort_fields = TASK_SORTS
    bulk_kind = "task"
    ascending_sorts = {STUCK_SORT: STUCK_SORT_FIELD}
    sort_notes = {STUCK_SORT: STUCK_SORT_NOTE}
    export_url_name = "tasks:export"
    export_filename = "tasks"
    export_columns = TASK_EXPORT
    saved_view_kind = "tasks"

    def get_queryset(self) -> QuerySet:
        return Task.objects.only(*TaskTable.fields)

    def get_table(self, rows: list[Task]) -> TaskTable:
        return TaskTable(rows, operator=roles.has_role(self.request.user, roles.OPERATOR))


class MessageListView(RoleRequiredMixin, KeysetListView):
    filterset_class = MessageFilterSet
    form_class = MessageFilterForm
    table_class = MessageTable
    title = _("Messages")
    export_url_name = "tasks:messages-export"
    export_filename = "messages"
    export_columns = MESSAGE_EXPORT
    saved_view_kind = "messages"

    def get_queryset(self) -> QuerySet:
        return Message.objects.select_related("task").only(*MessageTable.fields)


@role_required(roles.SUPPORT)
def task_detail(request: HttpRequest, task_id: str) -> HttpResponse:
    candidates = selectors.tasks_by_id(task_id, protocol=request.GET.get("protocol"))
    if not candidates:
        raise Http404("No task with this id is mirrored.")
    if len(candidates) > 1:
        return render(request, "tasks/choose.html", {"task_id": task_id, "tasks": candidates})
    task = candidates[0]
    projection = task.expected_projection
    status = 200
    try:
        timeline = selectors.timeline(task, before=request.GET.get("before"), limit=TIMELINE_PAGE)
    except BadCursor as exc:
        # A forged or garbled "load earlier" link: say so (400), show the latest messages.
        messages.warning(request, str(exc))
        timeline = selectors.timeline(task, limit=TIMELINE_PAGE)
        status = 400
    refusal = cancel_refusal(task)
    context = {
        "task": task,
        "projection": projection,
        "drift": task.projection_drift(projection),
        "attention": attention(
            task.status, task.updated_at or task.created_at, deadline_at=task.deadline_at
        ),
        "timeline": timeline,
        "deciding_reply": selectors.deciding_reply(task),
        # Read whatever the state, so the page costs the same queries every time.
        "cancel_warnings": selectors.cancel_warnings(task, selectors.latest_agent_reply(task)),
        "artifacts": selectors.artifacts(task),
        "cancel_refusal": refusal,
        "idempotency_key": new_idempotency_key(),
        "last_cancel": last_cancel_request("task", task.task_id, protocol=task.protocol),
        "trail": audit_trail("task", task.task_id),
    }
    if getattr(request, "htmx", None) and request.htmx.target == "timeline":
        return render(request, "tasks/_timeline.html", context, status=status)
    return render(request, "tasks/detail.html", context, status=status)


@require_http_methods(["GET", "POST"])
@role_required(roles.SUPPORT)
def cancel_task_view(request: HttpRequest, task_id: str) -> HttpResponse:
    """``tasks/<id>/cancel/``: the cancel of ``<id>`` — or the page of the task ``<id>/cancel``.

    Ids may hold ``/`` (``%2F`` in links, decoded by the server), so the detail
    URL of an id ending in ``/cancel`` reads as this route: a plain GET (not the
    htmx inline row) shows that task when it exists. A POST always cancels.
    """
    if request.method == "GET" and request.GET.get("row") != "1":
        whole = f"{task_id}/cancel"
        if selectors.tasks_by_id(whole, protocol=request.GET.get("protocol")):
            return task_detail(request, whole)
    return _cancel_task(request, task_id)


@role_required(roles.OPERATOR)
def _cancel_task(request: HttpRequest, task_id: str) -> HttpResponse:
    """GET: the confirmation (an inline row under a list row with htmx); POST: cancel."""
    protocol = request.POST.get("protocol") or request.GET.get("protocol") or ""
    task = get_object_or_404(Task, protocol=protocol, task_id=task_id)
    detail_url = object_url("tasks:detail", task.task_id, protocol=task.protocol)
    in_row = request.GET.get("row") == "1" and getattr(request, "htmx", None)
    if request.method == "GET":
        if not in_row:
            return redirect(f"{detail_url}#cancel")
        context = {"task": task, "idempotency_key": new_idempotency_key()}
        return render(request, "tasks/_cancel_row.html", context)
    try:
        outcome = cancel_task(
            task.protocol,
            task.task_id,
            actor=Actor.of_user(request.user),
            reason=request.POST.get("reason"),
            idempotency_key=request.POST.get("idempotency_key"),
        )
    except InvalidCancel as exc:
        return cancel_views.invalid(request, str(exc), detail_url)
    if in_row:
        context = {
            "outcome": outcome,
            "style": outcome.kind.style,
            # The list row, redrawn with the task's new state (only operators get here).
            "updated_row": TaskTable(operator=True).row(
                outcome.obj, attrs={"hx-swap-oob": "outerHTML"}
            )
            if outcome.obj
            else "",
        }
        return render(request, "tasks/_cancel_row_result.html", context)
    return cancel_views.respond(
        request, outcome, detail_url=detail_url, fragment="tasks/_cancel_result.html"
    )
