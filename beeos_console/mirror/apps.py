from django.apps import AppConfig


class MirrorConfig(AppConfig):
    name = "beeos_console.mirror"
    label = "console_mirror"
    verbose_name = "Mirror"

    def ready(self) -> None:
        # Registers the status badge cell for tables of lower layers (the audit log).
        from beeos_console.mirror import columns  # noqa: F401
