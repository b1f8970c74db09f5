"""`manage.py grant_app_role ROLE`: the role the console runs as, kept off audit history.

Run after ``migrate``, connected as the owner: it uses ``DATABASE_URL``'s
connection (``make run`` / ``make serve`` call it while ``DATABASE_URL`` is still
the owner's, before they move to the role). The role may read and write every console table but may
only INSERT and SELECT audit entries: no UPDATE, DELETE or TRUNCATE, and, not
owning the table, no ALTER (so it cannot switch the append-only trigger off).
"""

from __future__ import annotations

import os
from typing import Any
from urllib.parse import quote, urlsplit, urlunsplit

import dj_database_url
import psycopg
from django.core.management.base import BaseCommand, CommandError
from django.db import connection
from psycopg import sql

from beeos_console.auditlog.models import AuditEntry


class Command(BaseCommand):
    help = "Create or update the app's database role: all tables, but audit entries append-only."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("role", help="The role DATABASE_URL connects as, e.g. console_app.")
        parser.add_argument("--password", default="", help="Set (or reset) its login password.")
        parser.add_argument(
            "--print-url",
            action="store_true",
            help="Print only DATABASE_URL rewritten to connect as the role (checked: it "
            "connects), for `make run`.",
        )

    def handle(self, *args: Any, role: str, password: str, print_url: bool, **options: Any) -> None:
        if not role.replace("_", "").isalnum():
            raise CommandError("A role name is letters, digits and underscores only.")
        name = sql.Identifier(role)
        audit_table = sql.Identifier(AuditEntry._meta.db_table)
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", [role])
            if cursor.fetchone() is None:
                cursor.execute(sql.SQL("CREATE ROLE {} LOGIN").format(name))
            if password:
                cursor.execute(
                    sql.SQL("ALTER ROLE {} PASSWORD {}").format(name, sql.Literal(password))
                )
            cursor.execute("SELECT current_database(), current_user")
            database, owner = cursor.fetchone()
            for statement in (
                "GRANT CONNECT, TEMPORARY ON DATABASE {db} TO {role}",
                "GRANT USAGE ON SCHEMA public TO {role}",
                "GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO {role}",
                "GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO {role}",
                # Tables a later migration (run as the owner) creates.
                "ALTER DEFAULT PRIVILEGES FOR ROLE {owner} IN SCHEMA public"
                " GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO {role}",
                "ALTER DEFAULT PRIVILEGES FOR ROLE {owner} IN SCHEMA public"
                " GRANT USAGE, SELECT ON SEQUENCES TO {role}",
                # History is append-only for the app.
                "REVOKE UPDATE, DELETE, TRUNCATE, REFERENCES, TRIGGER ON {audit} FROM {role}",
            ):
                cursor.execute(
                    sql.SQL(statement).format(
                        db=sql.Identifier(database),
                        role=name,
                        owner=sql.Identifier(owner),
                        audit=audit_table,
                    )
                )
        if print_url:
            url = role_url(os.environ.get("DATABASE_URL", ""), role, password)
            try:
                psycopg.connect(conninfo_of(url), connect_timeout=5).close()
            except psycopg.Error as exc:
                raise CommandError(f"Cannot connect as {role!r}: {exc}") from exc
            self.stdout.write(url)
            return
        self.stdout.write(
            f"Role {role!r}: every console table, audit entries INSERT and SELECT only "
            f"(owner {owner!r} keeps the schema)."
        )


def role_url(url: str, role: str, password: str = "") -> str:
    """``url`` with its user (and password) replaced by the role's."""
    parts = urlsplit(url)
    host = parts.netloc.rpartition("@")[2]
    user = quote(role, safe="") + (f":{quote(password, safe='')}" if password else "")
    return urlunsplit(parts._replace(netloc=f"{user}@{host}"))


def conninfo_of(url: str) -> str:
    """A libpq connection string for a DATABASE_URL (as dj-database-url reads it)."""
    config = dj_database_url.parse(url)
    fields = {
        "dbname": config["NAME"],
        "user": config["USER"],
        "password": config["PASSWORD"],
        "host": config["HOST"],
        "port": config["PORT"],
    }
    return " ".join(f"{k}='{v}'" for k, v in fields.items() if v)
