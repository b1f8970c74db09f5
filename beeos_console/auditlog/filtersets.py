"""FilterSet for the audit log (HTML list and REST API)."""

from __future__ import annotations

import django_filters

from beeos_console.auditlog.models import AuditEntry
from beeos_console.core.filtersets import (
    ConsoleFilterSet,
    NoopBooleanFilter,
    SortFilter,
    UtcDateTimeFilter,
    datetime_widget,
)


class AuditEntryFilterSet(ConsoleFilterSet):
    actor = django_filters.CharFilter(max_length=150)
    action = django_filters.CharFilter(max_length=64)
    object_kind = django_filters.ChoiceFilter(
        choices=[
            ("task", "task"),
            ("operation", "operation"),
            ("message", "message"),
            ("batch", "batch"),
        ],
        label="Object kind",
    )
    object_id = django_filters.CharFilter(label="Object id", max_length=256)
    at_after = UtcDateTimeFilter(
        field_name="at", lookup_expr="gte", label="From", widget=datetime_widget()
    )
    at_before = UtcDateTimeFilter(
        field_name="at", lookup_expr="lt", label="Before", widget=datetime_widget()
    )
    sort = SortFilter(choices=[("at", "Newest first")], empty_label=None, label="Sort")
    refresh = NoopBooleanFilter(label="Auto-refresh")

    class Meta:
        model = AuditEntry
        fields: list[str] = []
