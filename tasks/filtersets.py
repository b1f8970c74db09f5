"""FilterSets for tasks and messages: the same classes serve the HTML lists and the REST API.

Data filters only; the filter panels (suggested values, order, sort, refresh) are ``forms.py``.
"""

from __future__ import annotations

import django_filters

from beeos_console.core.filtersets import (
    AnyValueMultipleFilter,
    ConsoleFilterSet,
    CreatedWithinFilter,
    PrefixSearchFilter,
    UtcDateTimeFilter,
)
from beeos_console.mirror.filtersets import MirrorFilterSet
from tasks.models import Message, Task

TASK_SORTS = {"created": "created_at", "updated": "updated_at"}


class TaskFilterSet(MirrorFilterSet):
    q = PrefixSearchFilter(label="Task or context id starts with", fields=("task_id", "context_id"))
    protocol = django_filters.MultipleChoiceFilter(choices=Task.Protocol.choices)
    raw_state = AnyValueMultipleFilter(label="Raw state")
    reason = AnyValueMultipleFilter(label="Reason")
    agent_id = django_filters.CharFilter(label="Agent id", max_length=256)

    class Meta:
        model = Task
        fields: list[str] = []


class MessageFilterSet(ConsoleFilterSet):
    state = AnyValueMultipleFilter(label="State")
    stop_reason = AnyValueMultipleFilter(label="Stop reason")
    type = AnyValueMultipleFilter(label="Type")
    task = django_filters.CharFilter(field_name="task__task_id", label="Task id", max_length=256)
    conversation = django_filters.CharFilter(
        field_name="conversation_id", label="Conversation id", max_length=256
    )
    created_within = CreatedWithinFilter()
    created_after = UtcDateTimeFilter(
        field_name="created_at", lookup_expr="gte", label="Created from"
    )
    created_before = UtcDateTimeFilter(
        field_name="created_at", lookup_expr="lt", label="Created before"
    )

    class Meta:
        model = Message
        fields: list[str] = []
