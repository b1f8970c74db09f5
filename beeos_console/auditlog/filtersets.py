"""FilterSet for the audit log (HTML list and REST API): data filters only (panel: ``forms.py``)."""

from __future__ import annotations

import django_filters
from django.utils.translation import gettext_lazy as _

from beeos_console.auditlog.models import AuditEntry
from beeos_console.core.filtersets import (
    ConsoleFilterSet,
    CreatedWithinFilter,
    UtcDateTimeFilter,
)

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
        label=_("Object kind"),
    )
    object_id = django_filters.CharFilter(label=_("Object id"), max_length=256)
    # The time presets of every list (last 1 h / 24 h / 7 d), on the entry's time.
    at_within = CreatedWithinFilter(field_name="at", label=_("When"))
    at_after = UtcDateTimeFilter(field_name="at", lookup_expr="gte", label=_("From"))
    at_before = UtcDateTimeFilter(field_name="at", lookup_expr="lt", label=_("Before"))

    class Meta:
        model = AuditEntry
        fields: list[str] = []
