"""FilterSets for tasks and messages: the same classes serve the HTML lists and the REST API."""

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
from .models import Message, Task

TASK_SORTS = {"created": "created_at", "updated": "updated_at"}
TASK_REASONS = (
    "error",
    "timeout",
    "rejected",
    "input_required",
    "auth_required",
    "outcome_unknown",
    "unmapped_state",
)


class TaskFilterSet(ConsoleFilterSet):
    q = PrefixSearchFilter(label="Task or context id starts with", fields=("task_id", "context_id"))
    status = django_filters.MultipleChoiceFilter(
        choices=choice_pairs(DISPLAY_STATUSES), label="Product status"
    )
    protocol = django_filters.MultipleChoiceFilter(choices=Task.Protocol.choices)
    raw_state = AnyValueMultipleFilter(
        choices=choice_pairs(
            sorted({*states.OPENAPI_TABLE, *states.A2A_TABLE, *states.PRODUCT_TABLE})
        ),
        label="Raw state",
    )
    reason = AnyValueMultipleFilter(choices=choice_pairs(TASK_REASONS))
    outcome_certainty = django_filters.MultipleChoiceFilter(
        choices=choice_pairs(OUTCOME_CERTAINTIES), label="Outcome certainty"
    )
    retry_policy = django_filters.MultipleChoiceFilter(
        choices=choice_pairs(RETRY_POLICIES), label="Retry policy"
    )
    agent_id = django_filters.CharFilter(label="Agent id", max_length=256)
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
        model = Task
        fields: list[str] = []


class MessageFilterSet(ConsoleFilterSet):
    state = AnyValueMultipleFilter(choices=choice_pairs(states.MESSAGE_STATES))
    stop_reason = AnyValueMultipleFilter(
        choices=choice_pairs(states.STOP_REASONS), label="Stop reason"
    )
    type = AnyValueMultipleFilter(
        choices=choice_pairs(("agent_reply", "chat_message", "tool_call", "a2a_message"))
    )
    task = django_filters.CharFilter(field_name="task__task_id", label="Task id", max_length=256)
    conversation = django_filters.CharFilter(
        field_name="conversation_id", label="Conversation id", max_length=256
    )
    sort = SortFilter(choices=[("created", "Newest created")], empty_label=None, label="Sort")
    refresh = NoopBooleanFilter(label="Auto-refresh")

    class Meta:
        model = Message
        fields: list[str] = []
