"""FilterSets for tasks and messages: the same classes serve the HTML lists and the REST API.

Data filters only; the filter panels (suggested values, order, sort, refresh) are ``forms.py``.
"""

from __future__ import annotations

import django_filters
from django.db.models import QuerySet
from django.utils.translation import gettext_lazy as _

from beeos_console.core.filtersets import (
    AnyValueMultipleFilter,
    ConsoleFilterSet,
    CreatedWithinFilter,
    PrefixSearchFilter,
    UtcDateTimeFilter,
)
from beeos_console.mirror.filtersets import MirrorFilterSet
from tasks import conformance as checks
from tasks.models import Message, Task

TASK_SORTS = {"created": "created_at", "updated": "updated_at"}


class TaskFilterSet(MirrorFilterSet):
    q = PrefixSearchFilter(
        label=_("Task or context id starts with"), fields=("task_id", "context_id")
    )
    protocol = django_filters.MultipleChoiceFilter(choices=Task.Protocol.choices)
    raw_state = AnyValueMultipleFilter(label=_("Raw state"))
    reason = AnyValueMultipleFilter(label=_("Reason"))
    agent_id = django_filters.CharFilter(label=_("Agent id"), max_length=256)
    # Who delegates to whom (the agent pages' edges; task_caller/target_agent_created_idx).
    caller_agent_id = django_filters.CharFilter(label=_("Caller agent"), max_length=256)
    target_agent_id = django_filters.CharFilter(label=_("Target agent"), max_length=256)
    # Set by the A2A pull sync (partial indexes task_a2a_direction_idx / _counterpart_idx).
    a2a_direction = django_filters.ChoiceFilter(
        choices=Task.A2ADirection.choices, label=_("A2A direction")
    )
    a2a_counterpart = django_filters.CharFilter(label=_("A2A counterpart agent"), max_length=256)
    # The agents' conformance scorecard links each of its lines here (tasks.conformance).
    conformance = django_filters.ChoiceFilter(
        choices=checks.CONFORMANCE_CHOICES,
        label=_("Conformance"),
        method="filter_conformance",
    )
    cancel_outcome = django_filters.ChoiceFilter(
        choices=checks.CANCEL_OUTCOME_CHOICES,
        label=_("Console cancel ended"),
        method="filter_cancel_outcome",
    )

    class Meta:
        model = Task
        fields: list[str] = []

    def filter_conformance(self, qs: QuerySet, name: str, value: str) -> QuerySet:
        return qs.filter(checks.conformance_q(value)) if value else qs

    def filter_cancel_outcome(self, qs: QuerySet, name: str, value: str) -> QuerySet:
        return qs.filter(checks.cancel_q(value)) if value else qs


class MessageFilterSet(ConsoleFilterSet):
    state = AnyValueMultipleFilter(label=_("State"))
    stop_reason = AnyValueMultipleFilter(label=_("Stop reason"))
    type = AnyValueMultipleFilter(label=_("Type"))
    task = django_filters.CharFilter(field_name="task__task_id", label=_("Task id"), max_length=256)
    conversation = django_filters.CharFilter(
        field_name="conversation_id", label=_("Conversation id"), max_length=256
    )
    created_within = CreatedWithinFilter()
    created_after = UtcDateTimeFilter(
        field_name="created_at", lookup_expr="gte", label=_("Created from")
    )
    created_before = UtcDateTimeFilter(
        field_name="created_at", lookup_expr="lt", label=_("Created before")
    )

    class Meta:
        model = Message
        fields: list[str] = []
