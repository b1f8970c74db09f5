"""The filter panel every mirrored list shares: projection, time, stuck, sort, refresh."""

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
)
from beeos_console.mirror.filtersets import MAX_STUCK_MINUTES, STUCK_SORT, TASK_ERROR_CODES
from beeos_console.mirror.i18n import status_choices
from beeos_console.mirror.states import DISPLAY_STATUSES, OUTCOME_CERTAINTIES, RETRY_POLICIES


class MirrorFilterForm(FilterForm):
    """The panel fields of ``MirrorFilterSet``'s filters, plus sort and auto-refresh."""

    status = checkbox_field(status_choices(DISPLAY_STATUSES), _("Product status"))
    outcome_certainty = checkbox_field(choice_pairs(OUTCOME_CERTAINTIES), _("Outcome certainty"))
    retry_policy = checkbox_field(choice_pairs(RETRY_POLICIES), _("Retry policy"))
    # Suggested task error codes (any value is searchable); operations suggest their own.
    error_code = checkbox_field(choice_pairs(TASK_ERROR_CODES), _("Error code"))
    upstream_missing = forms.NullBooleanField(label=_("Not found upstream"), required=False)
    created_within = created_within_field()
    created_after = datetime_field(_("Custom: created from (UTC)"))
    created_before = datetime_field(_("Custom: created before (UTC)"))
    stuck = forms.DecimalField(
        label=_("Stuck for more than (minutes)"),
        min_value=1,
        max_value=MAX_STUCK_MINUTES,
        required=False,
    )
    sort = sort_field(
        [
            ("created", _("Newest created")),
            ("updated", _("Recently updated")),
            (STUCK_SORT, _("Longest stuck first")),
        ]
    )
