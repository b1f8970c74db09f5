"""The webhook inbox pages (admins): the list, one event with its raw payload, retry."""

from __future__ import annotations

from django.contrib import messages
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _
from django.views.decorators.http import require_GET, require_POST

from beeos_console.auditlog.services import Actor
from beeos_console.core import roles
from beeos_console.core.listing import KeysetListView
from beeos_console.core.permissions import RoleRequiredMixin, role_required
from beeos_console.upstream import inbox
from beeos_console.upstream.lists import InboxFilterForm, InboxFilterSet, InboxTable
from beeos_console.upstream.models import WebhookInboxEvent
from beeos_console.upstream.selectors import webhook_backlog


class InboxListView(RoleRequiredMixin, KeysetListView):
    required_role = roles.ADMIN
    filterset_class = InboxFilterSet
    form_class = InboxFilterForm
    table_class = InboxTable
    title = _("Webhook inbox")
    sort_fields = {"received": "received_at"}
    default_sort = "received"

    def get_queryset(self) -> QuerySet:
        return WebhookInboxEvent.objects.only(*InboxTable.fields)


inbox_list_view = InboxListView.as_view()


@require_GET
@role_required(roles.ADMIN)
def inbox_event_view(request: HttpRequest, pk: int) -> HttpResponse:
    event = get_object_or_404(WebhookInboxEvent, pk=pk)
    context = {"event": event, "backlog": webhook_backlog()}
    return render(request, "upstream/inbox_event.html", context)


@require_POST
@role_required(roles.ADMIN)
def inbox_retry_view(request: HttpRequest, pk: int) -> HttpResponse:
    event = get_object_or_404(WebhookInboxEvent, pk=pk)
    if inbox.retry(event.pk, actor=Actor.of_user(request.user)):
        messages.success(
            request,
            gettext("Event #%(id)s is queued again; the worker applies it with the next batch.")
            % {"id": event.pk},
        )
    else:
        messages.warning(
            request,
            gettext("Event #%(id)s is %(status)s, not failed: nothing to retry.")
            % {"id": event.pk, "status": event.status},
        )
    return redirect("webhooks:detail", pk=event.pk)
