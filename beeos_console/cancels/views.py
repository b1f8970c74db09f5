"""Cancel pages: single cancels (htmx fragment or POST-redirect-GET) and bulk cancels."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse, QueryDict
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from beeos_console.auditlog.services import Actor
from beeos_console.cancels import bulk
from beeos_console.cancels.engine import InvalidCancel, new_idempotency_key
from beeos_console.cancels.models import BulkCancel, CancelRequest
from beeos_console.core import roles
from beeos_console.core.permissions import role_required
from operations.filtersets import RuntimeOperationFilterSet
from operations.models import RuntimeOperation
from operations.services import cancel_operation
from tasks.filtersets import TaskFilterSet
from tasks.models import Task
from tasks.services import cancel_task
from tasks.tables import TaskRows

RESULT_STYLE = {
    "cancelled": "success",
    "cancel_requested": "success",
    "refused": "info",
    "already_requested": "info",
    "not_sent": "warning",
    "uncertain": "warning",
    "failed": "error",
}


def _respond(request: HttpRequest, outcome: Any, *, detail_url: str, fragment: str) -> HttpResponse:
    style = RESULT_STYLE.get(outcome.result, "info")
    if getattr(request, "htmx", None):
        context = {
            "outcome": outcome,
            "style": style,
            "detail_url": detail_url,
            "idempotency_key": new_idempotency_key(),
        }
        return render(request, fragment, context)
    level = {"success": messages.SUCCESS, "warning": messages.WARNING, "error": messages.ERROR}
    messages.add_message(request, level.get(style, messages.INFO), outcome.message)
    return redirect(detail_url)


@require_http_methods(["GET", "POST"])
@role_required(roles.OPERATOR)
def cancel_task_view(request: HttpRequest, task_id: str) -> HttpResponse:
    """GET: the confirmation (an inline row under a list row with htmx); POST: cancel."""
    protocol = request.POST.get("protocol") or request.GET.get("protocol") or ""
    task = get_object_or_404(Task, protocol=protocol, task_id=task_id)
    detail_url = f"{reverse('tasks:detail', args=[task.task_id])}?protocol={task.protocol}"
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
        return _invalid(request, str(exc), detail_url)
    if in_row:
        context = {
            "outcome": outcome,
            "style": RESULT_STYLE.get(outcome.result, "info"),
            # The list row, redrawn with the task's new state (only operators get here).
            "updated_row": TaskRows(selectable=True, operator=True).row(
                outcome.obj, extra_attrs=' hx-swap-oob="outerHTML"'
            )
            if outcome.obj
            else "",
        }
        return render(request, "tasks/_cancel_row_result.html", context)
    return _respond(request, outcome, detail_url=detail_url, fragment="tasks/_cancel_result.html")


@require_POST
@role_required(roles.OPERATOR)
def cancel_operation_view(request: HttpRequest, operation_id: str) -> HttpResponse:
    op = get_object_or_404(RuntimeOperation, operation_id=operation_id)
    detail_url = reverse("operations:detail", args=[op.operation_id])
    try:
        outcome = cancel_operation(
            op.operation_id,
            actor=Actor.of_user(request.user),
            reason=request.POST.get("reason"),
            idempotency_key=request.POST.get("idempotency_key"),
        )
    except InvalidCancel as exc:
        return _invalid(request, str(exc), detail_url)
    return _respond(
        request, outcome, detail_url=detail_url, fragment="operations/_cancel_result.html"
    )


def _invalid(request: HttpRequest, message: str, detail_url: str) -> HttpResponse:
    if getattr(request, "htmx", None):
        return render(
            request,
            "console/_cancel_invalid.html",
            {"message": message},
            status=400,
        )
    messages.error(request, message)
    return redirect(detail_url)


# --- bulk ------------------------------------------------------------------------------

KINDS = {
    "task": (Task, TaskFilterSet, "tasks:list"),
    "operation": (RuntimeOperation, RuntimeOperationFilterSet, "operations:list"),
}


def _selection(request: HttpRequest, kind: str, data: QueryDict) -> tuple[Any, str]:
    model, filterset_class, _ = KINDS[kind]
    query = data.get("query", "")
    if data.get("scope") == "selected":
        picks = [p for p in data.getlist("pick") if p]
        if kind == "task":
            pairs = [p.split(":", 1) for p in picks if ":" in p]
            ids = {task_id for _, task_id in pairs}
            protocols = {protocol for protocol, _ in pairs}
            qs = model.objects.filter(task_id__in=ids, protocol__in=protocols)
            qs = [t for t in qs if f"{t.protocol}:{t.task_id}" in picks]
            return _ListSelection(qs), query
        return model.objects.filter(operation_id__in=picks), query
    filterset = filterset_class(QueryDict(query), queryset=model.objects.all())
    if not filterset.is_valid():
        return model.objects.none(), query
    return filterset.qs, query


class _ListSelection(list):
    """An explicit pick list behaving enough like a queryset for ``bulk.preview``."""

    def order_by(self, *args: Any) -> _ListSelection:
        return self

    def only(self, *args: Any) -> _ListSelection:
        return self


@require_http_methods(["GET", "POST"])
@role_required(roles.OPERATOR)
def bulk_cancel_view(request: HttpRequest, kind: str) -> HttpResponse:
    if kind not in KINDS:
        raise Http404
    data = request.POST if request.method == "POST" else request.GET
    selection_qs, query = _selection(request, kind, data)
    selection = bulk.preview(kind, selection_qs)
    context: dict[str, Any] = {
        "kind": kind,
        "selection": selection,
        "query": query,
        "scope": data.get("scope", "all"),
        "picks": data.getlist("pick"),
        "list_url": f"{reverse(KINDS[kind][2])}?{query}",
        "bulk_max": bulk.BULK_MAX,
        "reason": data.get("reason", ""),
    }
    if request.method == "POST":
        reason = (data.get("reason") or "").strip()
        typed = " ".join((data.get("confirmation") or "").split()).lower()
        errors = []
        if not reason:
            errors.append("A reason is required: say why these are being cancelled.")
        if selection.too_many:
            errors.append(f"More than {bulk.BULK_MAX} items: narrow the filter first.")
        if selection.count == 0:
            errors.append("Nothing in this selection can be cancelled.")
        if typed != selection.confirmation:
            errors.append(
                f"Type “{selection.confirmation}” to confirm (the selection now holds "
                f"{selection.count} cancellable {selection.noun})."
            )
        if errors:
            context["errors"] = errors
            return render(request, "console/bulk_preview.html", context, status=400)
        batch = bulk.start(selection, actor=Actor.of_user(request.user), reason=reason, query=query)
        return redirect("bulk:detail", pk=batch.pk)
    return render(request, "console/bulk_preview.html", context)


@role_required(roles.OPERATOR)
def bulk_detail_view(request: HttpRequest, pk: int) -> HttpResponse:
    batch = get_object_or_404(BulkCancel, pk=pk)
    items = list(
        CancelRequest.objects.filter(bulk=batch)
        .order_by("id")
        .only("object_id", "protocol", "result", "message", "state", "finished_at")[:1000]
    )
    context = {"batch": batch, "items": items, "running": batch.state in ("queued", "running")}
    if getattr(request, "htmx", None) and request.htmx.target == "bulk-progress":
        return render(request, "console/_bulk_progress.html", context)
    return render(request, "console/bulk_detail.html", context)
