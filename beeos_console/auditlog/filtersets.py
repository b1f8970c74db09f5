"""FilterSet for the audit log (HTML list and REST API): data filters only (panel: ``forms.py``)."""

from __future__ import annotations

import django_filters

from beeos_console.auditlog.models import AuditEntry
from beeos_console.core.filtersets import ConsoleFilterSet, UtcDateTimeFilter

OBJECT_KINDS = [
    ("task", "task"),
    ("operation", "operation"),
    ("message", "message"),
    ("batch", "batch"),
]


class AuditEntryFilterSet(ConsoleFilterSet):
    actor = django_filters.CharFilter(max_length=150)
    action = django_filters.CharFilter(max_length=64)
    object_kind = django_filters.ChoiceFilter(
        choices=OBJECT_KINDS,
        label="Object kind",
    )
    object_id = django_filters.CharFilter(label="Object id", max_length=256)
    at_after = UtcDateTimeFilter(field_name="at", lookup_expr="gte", label="From")
    at_before = UtcDateTimeFilter(field_name="at", lookup_expr="lt", label="Before")

    class Meta:
        model = AuditEntry
        fields: list[str] = []
