from django.apps import AppConfig


class AuditlogConfig(AppConfig):
    name = "beeos_console.auditlog"
    label = "console_auditlog"
    verbose_name = "The audit log"
