"""`manage.py migrate`, run as the owner role when ``DATABASE_MIGRATE_URL`` is set.

The app itself connects with ``DATABASE_URL`` as a role that may not alter the
schema or rewrite the audit log (``manage.py grant_app_role``); migrations need
the owner. Everything else is Django's own ``migrate``.
"""

from __future__ import annotations

from typing import Any

import dj_database_url
from django.conf import settings
from django.core.management.commands.migrate import Command as DjangoMigrate
from django.db import DEFAULT_DB_ALIAS, connections


class Command(DjangoMigrate):
    help = f"{DjangoMigrate.help} Runs as DATABASE_MIGRATE_URL's role when that is set."

    def handle(self, *args: Any, **options: Any) -> None:
        owner_url = getattr(settings, "DATABASE_MIGRATE_URL", "")
        if owner_url and options.get("database", DEFAULT_DB_ALIAS) == DEFAULT_DB_ALIAS:
            owner = dj_database_url.parse(owner_url)
            connection = connections[DEFAULT_DB_ALIAS]
            connection.close()
            for key in ("NAME", "USER", "PASSWORD", "HOST", "PORT"):
                connection.settings_dict[key] = owner[key]
        super().handle(*args, **options)
