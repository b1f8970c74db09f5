"""Runtime operation pages: every internal value stays beside the display status."""

from __future__ import annotations

from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseNotAllowed
from django.shortcuts import get_object_or_404, render
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
from beeos_console.core.permissions import RoleRequiredMixin, role_required
from beeos_console.mirror.attention import attention
from beeos_console.mirror.filtersets import STUCK_SORT, STUCK_SORT_FIELD, STUCK_SORT_NOTE
from operations.filtersets import OPERATION_SORTS, RuntimeOperationFilterSet
from operations.forms import OperationFilterForm
from operations.tables import OPERATION_EXPORT, OperationTable

from . import selectors
from .models import RuntimeOperation
from .services.cancel import cancel_operation
from .services.rules import project_operation_row


class OperationListView(RoleRequiredMixin, KeysetListView):
    filterset_class = RuntimeOperationFilterSet
    form_class = OperationFilterForm
    table_class = OperationTable
    title = _("Runtime operations")
    sort_fields = OPERATION_SORTS
    bulk_kind = "operation"
    ascending_sorts = {STUCK_SORT: STUCK_SORT_FIELD}
    sort_notes = {STUCK_SORT: STUCK_SORT_NOTE}
    export_url_name = "operations:export"
    export_filename = "operations"
    export_columns = OPERATION_EXPORT
    saved_view_kind = "operations"

    def get_queryset(self) -> QuerySet:
        return RuntimeOperation.objects.only(*OperationTable.fields)

    def get_table(self, rows: list[RuntimeOperation]) -> OperationTable:
        return OperationTable(rows, selectable=roles.has_role(self.request.user, roles.OPERATOR))


@role_required(roles.SUPPORT)
def operation_detail(request: HttpRequest, operation_id: str) -> HttpResponse:
    op = get_object_or_404(RuntimeOperation, operation_id=operation_id)
    projection = project_operation_row(op)
    events = selectors.events(op)
    context = {
        "op": op,
        "projection": projection,
        "drift": op.projection_drift(projection),
        "attention": attention(op.status, op.updated_at or op.created_at),
        "events": events.events,
        "events_truncated": events.truncated,
        "cancel_refusal": op.cancel_refusal,
        "idempotency_key": new_idempotency_key(),
        "last_cancel": last_cancel_request("operation", op.operation_id),
        "trail": audit_trail("operation", op.operation_id),
    }
    return render(request, "operations/detail.html", context)


@require_http_methods(["GET", "POST"])
@role_required(roles.SUPPORT)
def cancel_operation_view(request: HttpRequest, operation_id: str) -> HttpResponse:
    """``operations/<id>/cancel/``: POST cancels ``<id>``; a GET is the page of ``<id>/cancel``.

    Ids may hold ``/`` (``%2F`` in links, decoded by the server), so the detail
    URL of an id ending in ``/cancel`` reads as this route.
    """
    if request.method == "GET":
        whole = f"{operation_id}/cancel"
        if RuntimeOperation.objects.filter(operation_id=whole).exists():
            return operation_detail(request, whole)
        return HttpResponseNotAllowed(["POST"])
    return _cancel_operation(request, operation_id)


@role_required(roles.OPERATOR)
def _cancel_operation(request: HttpRequest, operation_id: str) -> HttpResponse:
    op = get_object_or_404(RuntimeOperation, operation_id=operation_id)
    detail_url = object_url("operations:detail", op.operation_id)
    try:
        outcome = cancel_operation(
            op.operation_id,
            actor=Actor.of_user(request.user),
            reason=request.POST.get("reason"),
            idempotency_key=request.POST.get("idempotency_key"),
        )
    except InvalidCancel as exc:
        return cancel_views.invalid(request, str(exc), detail_url)
    return cancel_views.respond(
        request, outcome, detail_url=detail_url, fragment="operations/_cancel_result.html"
    )
