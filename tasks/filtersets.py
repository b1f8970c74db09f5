"""FilterSets for tasks and messages: the same classes serve the HTML lists and the REST API."""

from __future__ import annotations

import django_filters

from beeos_console.core.filtersets import (
    AnyValueMultipleFilter,
    ConsoleFilterSet,
    NoopBooleanFilter,
    PrefixSearchFilter,
    SortFilter,
    choice_pairs,
)
from beeos_console.mirror.filtersets import MirrorFilterSet
from tasks import states
from tasks.models import Message, Task

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


class TaskFilterSet(MirrorFilterSet):
    q = PrefixSearchFilter(label="Task or context id starts with", fields=("task_id", "context_id"))
    protocol = django_filters.MultipleChoiceFilter(choices=Task.Protocol.choices)
    raw_state = AnyValueMultipleFilter(
        choices=choice_pairs(
            sorted({*states.OPENAPI_TABLE, *states.A2A_TABLE, *states.PRODUCT_TABLE})
        ),
        label="Raw state",
    )
    reason = AnyValueMultipleFilter(choices=choice_pairs(TASK_REASONS))
    agent_id = django_filters.CharFilter(label="Agent id", max_length=256)

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
