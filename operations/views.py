"""Runtime operation pages: every internal value stays beside the display status."""

from __future__ import annotations

from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render

from beeos_console.auditlog.models import AuditEntry
from beeos_console.cancels.engine import new_idempotency_key
from beeos_console.cancels.models import CancelRequest
from beeos_console.core import roles
from beeos_console.core.listing import KeysetListView
from beeos_console.core.permissions import RoleRequiredMixin, role_required
from operations.filtersets import OPERATION_SORTS, RuntimeOperationFilterSet
from operations.tables import COLUMNS, operation_table

from . import states
from .models import RuntimeOperation
from .services import project_operation_row

EVENT_ROWS = 500
TRAIL_ROWS = 50


class OperationListView(RoleRequiredMixin, KeysetListView):
    filterset_class = RuntimeOperationFilterSet
    title = "Runtime operations"
    sort_fields = OPERATION_SORTS
    bulk_kind = "operation"

    def get_queryset(self) -> QuerySet:
        return RuntimeOperation.objects.only(*COLUMNS)

    def render_rows(self, rows: list[RuntimeOperation]) -> str:
        selectable = roles.has_role(self.request.user, roles.OPERATOR)
        return operation_table(rows, selectable=selectable)


@role_required(roles.SUPPORT)
def operation_detail(request: HttpRequest, operation_id: str) -> HttpResponse:
    op = get_object_or_404(RuntimeOperation, operation_id=operation_id)
    projection = project_operation_row(op)
    events = list(op.events.order_by("sequence", "event_id")[: EVENT_ROWS + 1])
    context = {
        "op": op,
        "projection": projection,
        "drift": op.projection_drift(projection),
        "events": events[:EVENT_ROWS],
        "events_truncated": len(events) > EVENT_ROWS,
        "cancel_refusal": states.cancel_refusal(op.raw_status),
        "idempotency_key": new_idempotency_key(),
        "last_cancel": CancelRequest.objects.filter(
            object_kind="operation", object_id=op.operation_id
        )
        .order_by("-created_at")
        .first(),
        "trail": list(
            AuditEntry.objects.filter(object_kind="operation", object_id=op.operation_id)[
                :TRAIL_ROWS
            ]
        ),
    }
    return render(request, "operations/detail.html", context)
