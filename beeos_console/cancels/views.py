"""Cancel pages: bulk cancels, and the answer every single cancel page gives.

The single cancel views live with their app (``tasks.views``, ``operations.views``);
they answer through ``respond`` / ``invalid`` below (htmx fragment or POST-redirect-GET).
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse, QueryDict
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.translation import gettext
from django.views.decorators.http import require_http_methods

from beeos_console.auditlog.selectors import audit_trail
from beeos_console.auditlog.services import Actor
from beeos_console.cancels import bulk
from beeos_console.cancels.engine import new_idempotency_key
from beeos_console.cancels.models import BulkCancel
from beeos_console.cancels.selectors import bulk_items, bulk_jobs
from beeos_console.core import roles
from beeos_console.core.pagination import BadCursor
from beeos_console.core.permissions import role_required
from beeos_console.mirror import registry
from beeos_console.mirror.registry import MirroredKind


def respond(request: HttpRequest, outcome: Any, *, detail_url: str, fragment: str) -> HttpResponse:
    style = outcome.kind.style
    if getattr(request, "htmx", None):
        request_row = outcome.request
        context = {
            "outcome": outcome,
            "style": style,
            "detail_url": detail_url,
            "idempotency_key": new_idempotency_key(),
            # The audit trail on the page refreshes with the answer (out of band).
            "trail": audit_trail(request_row.object_kind, request_row.object_id)
            if request_row is not None
            else None,
        }
        return render(request, fragment, context)
    level = {"success": messages.SUCCESS, "warning": messages.WARNING, "error": messages.ERROR}
    messages.add_message(request, level.get(style, messages.INFO), outcome.message)
    return redirect(detail_url)


def invalid(request: HttpRequest, message: str, detail_url: str) -> HttpResponse:
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


def _selection(request: HttpRequest, kind: MirroredKind, data: QueryDict) -> tuple[Any, str]:
    query = data.get("query", "")
    if data.get("scope") == "selected":
        return _ListSelection(kind.picked([p for p in data.getlist("pick") if p])), query
    filterset = kind.filterset_class(QueryDict(query), queryset=kind.model.objects.all())
    if not filterset.is_valid():
        return kind.model.objects.none(), query
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
    mirrored = registry.cancellable_kinds().get(kind)
    if mirrored is None:
        raise Http404
    data = request.POST if request.method == "POST" else request.GET
    if data.get("scope") == "selected" and not [p for p in data.getlist("pick") if p]:
        # Nothing ticked: say so rather than open an empty preview.
        list_url = f"{reverse(mirrored.list_url_name)}?{data.get('query', '')}"
        context = {"kind": kind, "list_url": list_url}
        return render(request, "console/bulk_nothing_selected.html", context, status=400)
    selection_qs, query = _selection(request, mirrored, data)
    selection = bulk.preview(kind, selection_qs)
    context: dict[str, Any] = {
        "kind": kind,
        "selection": selection,
        "query": query,
        "scope": data.get("scope", "all"),
        "picks": data.getlist("pick"),
        "list_url": f"{reverse(mirrored.list_url_name)}?{query}",
        "bulk_max": bulk.BULK_MAX,
        "reason": data.get("reason", ""),
    }
    if request.method == "POST":
        reason = (data.get("reason") or "").strip()
        typed = " ".join((data.get("confirmation") or "").split()).lower()
        errors = []
        if not reason:
            errors.append(gettext("A reason is required: say why these are being cancelled."))
        if selection.too_many:
            errors.append(
                gettext("More than %(max)s items: narrow the filter first.")
                % {"max": bulk.BULK_MAX}
            )
        if selection.count == 0:
            errors.append(gettext("Nothing in this selection can be cancelled."))
        if typed != selection.confirmation:
            errors.append(
                gettext(
                    "Type “%(confirmation)s” to confirm (the selection now holds "
                    "%(items)s that can be cancelled)."
                )
                % {"confirmation": selection.confirmation, "items": selection.counted}
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
    context = {
        "batch": batch,
        "items": bulk_items(batch),
        "running": batch.state in ("queued", "running"),
    }
    if getattr(request, "htmx", None) and request.htmx.target == "bulk-progress":
        return render(request, "console/_bulk_progress.html", context)
    return render(request, "console/bulk_detail.html", context)


@role_required(roles.OPERATOR)
def bulk_list_view(request: HttpRequest) -> HttpResponse:
    """Every bulk cancel job with its progress and its report."""
    try:
        page = bulk_jobs(after=request.GET.get("after") or None)
    except BadCursor:
        return render(request, "console/bulk_list.html", {"page": None}, status=400)
    return render(request, "console/bulk_list.html", {"page": page})
