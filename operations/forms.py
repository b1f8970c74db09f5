"""The filter panel of the runtime operations list (``beeos_console.core.forms``).

Fields named like ``operations.filtersets``' filters, with their widgets,
suggested values and order, plus ``sort`` and ``refresh``; the FilterSet filters.
"""

from __future__ import annotations

from django.utils.translation import gettext_lazy as _

from beeos_console.core.filtersets import choice_pairs
from beeos_console.core.forms import checkbox_field, text_field
from beeos_console.mirror.forms import MirrorFilterForm
from beeos_console.mirror.i18n import status_choices
from beeos_console.mirror.states import DISPLAY_STATUSES
from operations import states
from operations.models import RuntimeOperation


class OperationFilterForm(MirrorFilterForm):
    # The same values as tasks' product status, named as DESIGN.md names them for operations.
    status = checkbox_field(status_choices(DISPLAY_STATUSES), _("Display status"))
    error_code = checkbox_field(choice_pairs(states.ERROR_CODES), _("Error code"))
    q = text_field(_("Operation id starts with"))
    raw_status = checkbox_field(choice_pairs(states.STATUSES), _("Raw status"))
    effect_state = checkbox_field(choice_pairs(states.EFFECT_STATES), "effectState")
    projection_state = checkbox_field(choice_pairs(states.PROJECTION_STATES), _("Projection state"))
    retry_mode = checkbox_field(choice_pairs(states.RETRY_MODES), "retryMode")
    capability = checkbox_field(choice_pairs(states.CAPABILITIES), _("Capability"))
    method = checkbox_field(choice_pairs(states.METHODS), _("Method"))
    instance_id = text_field(_("Instance id"))
    target_scope = checkbox_field(RuntimeOperation.Scope.choices, _("Target scope"))
