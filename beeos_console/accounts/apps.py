from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "beeos_console.accounts"
    label = "console_accounts"
    verbose_name = "Logins"

    def ready(self) -> None:
        # After axes (INSTALLED_APPS order): its receivers have flagged the request.
        from beeos_console.accounts import checks, logins  # noqa: F401 - checks register

        logins.connect()
