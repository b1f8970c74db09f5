from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class AgentsConfig(AppConfig):
    # Its own label and migrations: agent cards are this feature's only table.
    name = "beeos_console.agents"
    label = "console_agents"
    verbose_name = _("Agents")
    default_auto_field = "django.db.models.BigAutoField"
