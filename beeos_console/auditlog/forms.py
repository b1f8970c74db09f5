"""The filter panel of the audit log list (``beeos_console.core.forms``)."""

from __future__ import annotations

from django import forms

from beeos_console.auditlog.filtersets import OBJECT_KINDS
from beeos_console.core.forms import FilterForm, datetime_field, sort_field, text_field


class AuditEntryFilterForm(FilterForm):
    open_fields = ()

    actor = text_field("Actor", max_length=150)
    action = text_field("Action", max_length=64)
    object_kind = forms.ChoiceField(
        choices=[("", "---------"), *OBJECT_KINDS], label="Object kind", required=False
    )
    object_id = text_field("Object id")
    at_after = datetime_field("From")
    at_before = datetime_field("Before")
    sort = sort_field([("at", "Newest first")])
