from django.apps import AppConfig


class MirrorConfig(AppConfig):
    name = "beeos_console.mirror"
    label = "console_mirror"
    verbose_name = "Mirror"
