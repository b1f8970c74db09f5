"""The data filters every mirrored list shares: projection, time, stuck (HTML and REST)."""

from __future__ import annotations

from typing import Any

import django_filters
from django.db.models import QuerySet
from django.utils.translation import gettext_lazy as _

from beeos_console.core.filtersets import (
    AnyValueMultipleFilter,
    ConsoleFilterSet,
    CreatedWithinFilter,
    IsSetFilter,
    UtcDateTimeFilter,
)
from beeos_console.mirror.attention import stuck_cutoff, stuck_q
from beeos_console.mirror.states import (
    ACTIVE_PRODUCT_STATUSES,
    DISPLAY_STATUSES,
    OUTCOME_CERTAINTIES,
    RETRY_POLICIES,
)

# ``?stuck=`` upper bound: ten years in minutes, beyond is a typo.
MAX_STUCK_MINUTES = 60 * 24 * 366 * 10
# Suggested task error codes (any value is searchable): the failure codes of
# errors-reference.mdx a task's error can carry.
TASK_ERROR_CODES = (
    "agent_reply_error",
    "service_timeout",
    "agent_offline",
    "agent_service_unavailable",
    "internal_error",
    "conflict",
    "forbidden",
    "agent_not_found",
)


class StuckFilter(django_filters.NumberFilter):
    """Non-terminal work whose last upstream change is older than N minutes."""

    def __init__(self, *args: Any, status_field: str = "status", **kwargs: Any) -> None:
        self.status_field = status_field
        kwargs.setdefault("min_value", 1)
        kwargs.setdefault("max_value", MAX_STUCK_MINUTES)
        kwargs.setdefault("label", _("Stuck for more than (minutes)"))
        super().__init__(*args, **kwargs)

    def filter(self, qs: QuerySet, value: Any) -> QuerySet:
        if value in (None, ""):
            return qs
        cutoff = stuck_cutoff(minutes=int(value))
        return qs.filter(stuck_q(cutoff, status_field=self.status_field, field=self.field_name))


# ``?sort=stuck``: "longest stuck first" — non-terminal work only, oldest last
# upstream change first (ascending keyset pages on ``updated_at``).
STUCK_SORT = "stuck"
STUCK_SORT_FIELD = "updated_at"
STUCK_SORT_NOTE = _(
    "Longest stuck first: only queued and processing work, oldest last upstream change first."
)


class MirrorFilterSet(ConsoleFilterSet):
    """What every mirrored list filters on: projection, error, time, stuck (data filters only)."""

    status = django_filters.MultipleChoiceFilter(
        choices=[(v, v) for v in DISPLAY_STATUSES], label=_("Product status")
    )
    outcome_certainty = django_filters.MultipleChoiceFilter(
        choices=[(v, v) for v in OUTCOME_CERTAINTIES], label=_("Outcome certainty")
    )
    retry_policy = django_filters.MultipleChoiceFilter(
        choices=[(v, v) for v in RETRY_POLICIES], label=_("Retry policy")
    )
    # Any value is searchable; the panels suggest each kind's codes (``forms.py``).
    error_code = AnyValueMultipleFilter(label=_("Error code"))
    # Set by the sync when BeeOS answered 404 for the object (partial index).
    upstream_missing = IsSetFilter(field_name="upstream_missing_at", label=_("Not found upstream"))
    created_within = CreatedWithinFilter()
    created_after = UtcDateTimeFilter(
        field_name="created_at", lookup_expr="gte", label=_("Created from")
    )
    created_before = UtcDateTimeFilter(
        field_name="created_at", lookup_expr="lt", label=_("Created before")
    )
    stuck = StuckFilter(field_name="updated_at")

    def filter_queryset(self, queryset: QuerySet) -> QuerySet:
        queryset = super().filter_queryset(queryset)
        if self.data.get("sort") == STUCK_SORT:
            # "Longest stuck first" is about work that can still be stuck: never terminal rows.
            queryset = queryset.filter(status__in=sorted(ACTIVE_PRODUCT_STATUSES))
        return queryset
