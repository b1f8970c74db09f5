from django.apps import AppConfig


class OperationsConfig(AppConfig):
    name = "operations"

    def ready(self) -> None:
        # Register this app's kinds with the mirror (see beeos_console.mirror.registry).
        from . import kinds  # noqa: F401
