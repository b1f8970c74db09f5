"""The filter panel of the audit log list (``beeos_console.core.forms``)."""

from __future__ import annotations

from django import forms
from django.utils.translation import gettext_lazy as _

from beeos_console.auditlog.filtersets import OBJECT_KINDS
from beeos_console.core.forms import (
    FilterForm,
    created_within_field,
    datetime_field,
    sort_field,
    text_field,
)


def when_field() -> forms.ChoiceField:
    """The lists' time presets (``created_within_field``: one set of choices, one filter),
    on the entry's time (``at``); the custom range is the from / before fields."""
    field = created_within_field()
    field.label = _("When (UTC)")
    return field


class AuditEntryFilterForm(FilterForm):
    open_fields = ()

    actor = text_field(_("Actor"), max_length=150)
    action = text_field(_("Action"), max_length=64)
    object_kind = forms.ChoiceField(
        choices=[("", "---------"), *OBJECT_KINDS], label=_("Object kind"), required=False
    )
    object_id = text_field(_("Object id"))
    at_within = when_field()
    at_after = datetime_field(_("Custom: from (UTC)"))
    at_before = datetime_field(_("Custom: before (UTC)"))
    sort = sort_field([("at", _("Newest first"))])
