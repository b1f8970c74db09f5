from django.apps import AppConfig
from django.contrib.auth.signals import user_logged_in

from beeos_console.core.middleware import stamp_login


class ConsoleConfig(AppConfig):
    """The console's own tables keep their historical app label ``console``.

    Every model in ``beeos_console``'s subpackages declares ``app_label =
    "console"``, so one migration history (``core/migrations``) covers them all
    and databases created before the restructure upgrade without a change.
    """

    name = "beeos_console.core"
    label = "console"
    verbose_name = "BeeOS console"

    def ready(self) -> None:
        user_logged_in.connect(stamp_login, dispatch_uid="console-stamp-login")
