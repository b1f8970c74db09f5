"""The filter panels of the task and message lists (``beeos_console.core.forms``).

Fields named like ``tasks.filtersets``' filters, with their widgets, suggested
values and order, plus ``sort`` and ``refresh``; the FilterSets filter.
"""

from __future__ import annotations

from django import forms
from django.utils.translation import gettext_lazy as _

from beeos_console.core.filtersets import choice_pairs
from beeos_console.core.forms import (
    FilterForm,
    checkbox_field,
    created_within_field,
    datetime_field,
    sort_field,
    text_field,
)
from beeos_console.mirror.forms import MirrorFilterForm
from tasks import conformance as checks
from tasks import states
from tasks.models import Task

TASK_REASONS = (
    "error",
    "timeout",
    "rejected",
    "input_required",
    "auth_required",
    "outcome_unknown",
    "unmapped_state",
)
RAW_STATES = sorted({*states.OPENAPI_TABLE, *states.A2A_TABLE, *states.PRODUCT_TABLE})
MESSAGE_TYPES = ("agent_reply", "chat_message", "tool_call", "a2a_message")


class TaskFilterForm(MirrorFilterForm):
    q = text_field(_("Task or context id starts with"))
    protocol = checkbox_field(Task.Protocol.choices, _("Protocol"))
    raw_state = checkbox_field(choice_pairs(RAW_STATES), _("Raw state"))
    reason = checkbox_field(choice_pairs(TASK_REASONS), _("Reason"))
    agent_id = text_field(_("Agent id"))
    caller_agent_id = text_field(_("Caller agent"))
    target_agent_id = text_field(_("Target agent"))
    a2a_direction = forms.ChoiceField(
        choices=[("", _("any")), *Task.A2ADirection.choices],
        label=_("A2A direction"),
        required=False,
    )
    a2a_counterpart = text_field(_("A2A counterpart agent"))
    conformance = forms.ChoiceField(
        choices=[("", _("any")), *checks.CONFORMANCE_CHOICES],
        label=_("Conformance"),
        required=False,
    )
    cancel_outcome = forms.ChoiceField(
        choices=[("", _("any")), *checks.CANCEL_OUTCOME_CHOICES],
        label=_("Console cancel ended"),
        required=False,
    )


class MessageFilterForm(FilterForm):
    open_fields = ("state",)

    state = checkbox_field(choice_pairs(states.MESSAGE_STATES), _("State"))
    stop_reason = checkbox_field(choice_pairs(states.STOP_REASONS), _("Stop reason"))
    type = checkbox_field(choice_pairs(MESSAGE_TYPES), _("Type"))
    task = text_field(_("Task id"))
    conversation = text_field(_("Conversation id"))
    created_within = created_within_field()
    created_after = datetime_field(_("Custom: created from (UTC)"))
    created_before = datetime_field(_("Custom: created before (UTC)"))
    sort = sort_field([("created", _("Newest created"))])
