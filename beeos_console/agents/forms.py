"""The agents list's filter panel (``beeos_console.core.forms``)."""

from __future__ import annotations

from django import forms
from django.utils.translation import gettext_lazy as _

from beeos_console.core.forms import FilterForm, sort_field, text_field

from . import scorecard, selectors


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


class ScorecardFilterForm(FilterForm):
    open_fields = ()

    q = text_field(_("Agent id contains"))
    worst_line = forms.ChoiceField(
        choices=[("", _("any")), *scorecard.line_choices()],
        label=_("Worst line"),
        required=False,
    )
    failing = forms.ChoiceField(
        choices=[("", _("any")), ("true", _("yes")), ("false", _("no"))],
        label=_("A line does not pass"),
        required=False,
    )
    sort = sort_field([("rank", _("Worst first")), ("agent", _("Agent id"))])
