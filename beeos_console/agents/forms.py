"""The agents list's filter panel (``beeos_console.core.forms``)."""

from __future__ import annotations

from django import forms
from django.utils.translation import gettext_lazy as _

from beeos_console.core.forms import FilterForm, sort_field, text_field

from . import selectors


class AgentFilterForm(FilterForm):
    open_fields = ()

    q = text_field(_("Agent id contains"))
    stuck = forms.ChoiceField(
        choices=[("", _("any")), ("true", _("yes")), ("false", _("no"))],
        label=_("Has stuck work"),
        required=False,
    )
    active_within = forms.ChoiceField(
        choices=[("", _("any time"))]
        + [(name, label) for name, (_span, label) in selectors.WINDOWS.items()],
        label=_("Active in the"),
        required=False,
    )
    sort = sort_field([("active", _("Most recently active")), ("agent", _("Agent id"))])
