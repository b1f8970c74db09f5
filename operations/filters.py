"""FilterSets for runtime operations: shared by the HTML list and the REST API."""

from __future__ import annotations

import django_filters

from beeos_console.filters import (
    AnyValueMultipleFilter,
    ConsoleFilterSet,
    NoopBooleanFilter,
    PrefixSearchFilter,
    SortFilter,
    StuckFilter,
    UtcDateTimeFilter,
    choice_pairs,
    datetime_widget,
)
from beeos_console.states import DISPLAY_STATUSES, OUTCOME_CERTAINTIES, RETRY_POLICIES

from . import states
from .models import RuntimeOperation

OPERATION_SORTS = {"created": "created_at", "updated": "updated_at"}


class RuntimeOperationFilterSet(ConsoleFilterSet):
    q = PrefixSearchFilter(label="Operation id starts with", fields=("operation_id",))
    status = django_filters.MultipleChoiceFilter(
        choices=choice_pairs(DISPLAY_STATUSES), label="Display status"
    )
    raw_status = AnyValueMultipleFilter(choices=choice_pairs(states.STATUSES), label="Raw status")
    effect_state = AnyValueMultipleFilter(
        choices=choice_pairs(states.EFFECT_STATES), label="effectState"
    )
    projection_state = AnyValueMultipleFilter(
        choices=choice_pairs(states.PROJECTION_STATES), label="Projection state"
    )
    error_code = AnyValueMultipleFilter(
        choices=choice_pairs(states.ERROR_CODES), label="Error code"
    )
    retry_mode = AnyValueMultipleFilter(
        field_name="error_retry_mode", choices=choice_pairs(states.RETRY_MODES), label="retryMode"
    )
    outcome_certainty = django_filters.MultipleChoiceFilter(
        choices=choice_pairs(OUTCOME_CERTAINTIES), label="Outcome certainty"
    )
    retry_policy = django_filters.MultipleChoiceFilter(
        choices=choice_pairs(RETRY_POLICIES), label="Retry policy"
    )
    capability = AnyValueMultipleFilter(choices=choice_pairs(states.CAPABILITIES))
    method = AnyValueMultipleFilter(choices=choice_pairs(states.METHODS))
    instance_id = django_filters.CharFilter(label="Instance id", max_length=256)
    target_scope = django_filters.MultipleChoiceFilter(
        choices=RuntimeOperation.Scope.choices, label="Target scope"
    )
    created_after = UtcDateTimeFilter(
        field_name="created_at", lookup_expr="gte", label="Created from", widget=datetime_widget()
    )
    created_before = UtcDateTimeFilter(
        field_name="created_at", lookup_expr="lt", label="Created before", widget=datetime_widget()
    )
    stuck = StuckFilter(field_name="updated_at")
    sort = SortFilter(
        choices=[("created", "Newest created"), ("updated", "Recently updated")],
        empty_label=None,
        label="Sort",
    )
    refresh = NoopBooleanFilter(label="Auto-refresh")

    class Meta:
        model = RuntimeOperation
        fields: list[str] = []
