from django.apps import AppConfig


class ConsoleConfig(AppConfig):
    """The console's own tables keep their historical app label ``console``.

    Every model in ``beeos_console``'s subpackages declares ``app_label =
    "console"``, so one migration history (``core/migrations``) covers them all
    and databases created before the restructure upgrade without a change.
    """

    name = "beeos_console.core"
    label = "console"
    verbose_name = "BeeOS console"
