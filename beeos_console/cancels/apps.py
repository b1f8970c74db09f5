from django.apps import AppConfig


class CancelsConfig(AppConfig):
    name = "beeos_console.cancels"
    label = "console_cancels"
    verbose_name = "Cancels"
