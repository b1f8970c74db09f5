from django.apps import AppConfig


class UpstreamConfig(AppConfig):
    name = "beeos_console.upstream"
    label = "console_upstream"
    verbose_name = "BeeOS upstream"
