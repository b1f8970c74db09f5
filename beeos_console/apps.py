from django.apps import AppConfig


class ConsoleConfig(AppConfig):
    """The project package doubles as the app that owns roles and the audit log."""

    name = "beeos_console"
    label = "console"
    verbose_name = "BeeOS console"
