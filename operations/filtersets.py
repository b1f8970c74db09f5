"""FilterSets for runtime operations: shared by the HTML list and the REST API.

Data filters only; the filter panel (suggested values, order, sort, refresh) is ``forms.py``.
"""

from __future__ import annotations

import django_filters
from django.utils.translation import gettext_lazy as _

from beeos_console.core.filtersets import AnyValueMultipleFilter, PrefixSearchFilter, choice_pairs
from beeos_console.mirror.filtersets import MirrorFilterSet
from beeos_console.mirror.states import DISPLAY_STATUSES
from operations.models import RuntimeOperation

OPERATION_SORTS = {"created": "created_at", "updated": "updated_at"}


class RuntimeOperationFilterSet(MirrorFilterSet):
    q = PrefixSearchFilter(label=_("Operation id starts with"), fields=("operation_id",))
    status = django_filters.MultipleChoiceFilter(
        choices=choice_pairs(DISPLAY_STATUSES), label=_("Display status")
    )  # the same values, named as DESIGN.md names them for operations
    raw_status = AnyValueMultipleFilter(label=_("Raw status"))
    effect_state = AnyValueMultipleFilter(label="effectState")
    projection_state = AnyValueMultipleFilter(label=_("Projection state"))
    retry_mode = AnyValueMultipleFilter(field_name="error_retry_mode", label="retryMode")
    capability = AnyValueMultipleFilter(label=_("Capability"))
    method = AnyValueMultipleFilter(label=_("Method"))
    instance_id = django_filters.CharFilter(label=_("Instance id"), max_length=256)
    target_scope = django_filters.MultipleChoiceFilter(
        choices=RuntimeOperation.Scope.choices, label=_("Target scope")
    )

    class Meta:
        model = RuntimeOperation
        fields: list[str] = []
