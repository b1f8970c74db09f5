from django.apps import AppConfig


class ProjectionConfig(AppConfig):
    name = "beeos_console.projection"
    label = "console_projection"
    verbose_name = "Projection audit"
