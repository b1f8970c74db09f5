"""The webhook inbox list (``/webhooks/``, admins): its filters, filter panel and table."""

from __future__ import annotations

from typing import Any

import django_filters
from django import forms
from django.urls import reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString
from django.utils.translation import gettext_lazy as _

from beeos_console.core.filtersets import ConsoleFilterSet, UtcDateTimeFilter
from beeos_console.core.forms import FilterForm, datetime_field, sort_field, text_field
from beeos_console.core.tables import AgeColumn, CodeColumn, Column, Table, id_parts, truncate
from beeos_console.upstream.models import WebhookInboxEvent

STATUS_CHOICES = [(s, s) for s in WebhookInboxEvent.Status.values]  # raw values, not translated


class InboxFilterSet(ConsoleFilterSet):
    status = django_filters.ChoiceFilter(choices=STATUS_CHOICES, label=_("Status"))
    task_id = django_filters.CharFilter(label=_("Task id"), max_length=256)
    received_after = UtcDateTimeFilter(
        field_name="received_at", lookup_expr="gte", label=_("Received from (UTC)")
    )
    received_before = UtcDateTimeFilter(
        field_name="received_at", lookup_expr="lt", label=_("Received before (UTC)")
    )

    class Meta:
        model = WebhookInboxEvent
        fields: list[str] = []


class InboxFilterForm(FilterForm):
    open_fields = ()

    status = forms.ChoiceField(
        choices=[("", _("any")), *STATUS_CHOICES], label=_("Status"), required=False
    )
    task_id = text_field(_("Task id"))
    received_after = datetime_field(_("Received from (UTC)"))
    received_before = datetime_field(_("Received before (UTC)"))
    sort = sort_field([("received", _("Newest first"))])


class InboxTable(Table):
    received_at = AgeColumn(_("Received"))
    event = Column(_("Event"), accessor="pk", render="render_event")
    kind = CodeColumn(_("Kind"))
    task = Column(_("Task"), accessor="task_id", render="render_task")
    event_status = CodeColumn(_("Event status"))
    status = Column(_("Inbox status"), render="render_status")
    result = Column(_("Result or error"), accessor="", render="render_result")

    empty_text = _("No webhook events match these filters.")
    fields = (
        "id",
        "received_at",
        "kind",
        "protocol",
        "task_id",
        "event_status",
        "status",
        "result",
        "error",
        "attempts",
    )

    def render_event(self, value: int, e: WebhookInboxEvent) -> SafeString:
        url = reverse("webhooks:detail", args=[value])
        return format_html('<a href="{}">#{}</a>', url, value)

    def render_task(self, value: str, e: WebhookInboxEvent) -> SafeString:
        fmt, *args = id_parts(value, 30, tr=self.gettext)
        return format_html("<code>{}</code> " + fmt, e.protocol, *args)

    def render_status(self, value: str, e: WebhookInboxEvent) -> SafeString:
        colour = {"queued": "blue", "applied": "green", "failed": "red"}.get(value, "grey")
        return format_html('<span class="badge badge-{}">{}</span>', colour, value)

    def render_result(self, value: Any, e: WebhookInboxEvent) -> SafeString:
        if e.error:
            return format_html('<span class="error small">{}</span>', truncate(e.error, 120))
        return format_html("<code>{}</code>", e.result or "—")
