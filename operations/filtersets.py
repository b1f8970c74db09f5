"""FilterSets for runtime operations: shared by the HTML list and the REST API."""

from __future__ import annotations

import django_filters

from beeos_console.core.filtersets import AnyValueMultipleFilter, PrefixSearchFilter, choice_pairs
from beeos_console.mirror.filtersets import MirrorFilterSet
from beeos_console.mirror.states import DISPLAY_STATUSES
from operations import states
from operations.models import RuntimeOperation

OPERATION_SORTS = {"created": "created_at", "updated": "updated_at"}


class RuntimeOperationFilterSet(MirrorFilterSet):
    q = PrefixSearchFilter(label="Operation id starts with", fields=("operation_id",))
    status = django_filters.MultipleChoiceFilter(
        choices=choice_pairs(DISPLAY_STATUSES), label="Display status"
    )  # the same values, named as DESIGN.md names them for operations
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
    capability = AnyValueMultipleFilter(choices=choice_pairs(states.CAPABILITIES))
    method = AnyValueMultipleFilter(choices=choice_pairs(states.METHODS))
    instance_id = django_filters.CharFilter(label="Instance id", max_length=256)
    target_scope = django_filters.MultipleChoiceFilter(
        choices=RuntimeOperation.Scope.choices, label="Target scope"
    )

    class Meta:
        model = RuntimeOperation
        fields: list[str] = []
