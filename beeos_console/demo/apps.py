from django.apps import AppConfig


class DemoConfig(AppConfig):
    name = "beeos_console.demo"
    label = "console_demo"
    verbose_name = "Demo data"
