from django.apps import AppConfig


class SavedViewsConfig(AppConfig):
    name = "beeos_console.savedviews"
    label = "console_savedviews"
    verbose_name = "Saved views"
