"""`manage.py verify_audit_log`: walk the audit log's hash chain; exit 1 at a broken link."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from beeos_console.auditlog.chain import verify


class Command(BaseCommand):
    help = "Verify the audit log's hash chain (exit 1 and name the first broken link)."

    def handle(self, *args: Any, **options: Any) -> None:
        check = verify()
        if check.ok:
            self.stdout.write(self.style.SUCCESS(check.describe()))
            return
        self.stderr.write(self.style.ERROR(check.describe()))
        raise SystemExit(1)
