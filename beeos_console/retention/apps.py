from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class RetentionConfig(AppConfig):
    """``manage.py prune``: old terminal work leaves the mirror; the audit log stays."""

    name = "beeos_console.retention"
    label = "console_retention"
    verbose_name = _("Retention")
