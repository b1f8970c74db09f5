"""The suite's database backend: Django's PostgreSQL backend, flushing with DELETE.

After each transactional test (``transaction=True``, every browser test) Django
empties every table. Its PostgreSQL flush is one ``TRUNCATE`` of all 32 tables,
which gives each table and index a new file: 0.2-0.4 s a test here. A ``DELETE``
of the few rows a test wrote takes milliseconds and leaves the same empty tables.
Content types and permissions are kept: the ``post_migrate`` signal that follows
each flush would only create them again, the same (another 0.1 s a test).
Everything else is the stock backend (``tests/settings.py`` names it).
"""

from __future__ import annotations

from django.db.backends.postgresql import base

# What post_migrate creates (contenttypes, auth): left in place by the flush.
KEPT = frozenset({"django_content_type", "auth_permission"})


class DatabaseOperations(base.DatabaseOperations):
    def sql_flush(
        self,
        style,
        tables: list[str],
        *,
        reset_sequences: bool = False,
        allow_cascade: bool = False,
    ) -> list[str]:
        if not tables or reset_sequences or allow_cascade:
            return super().sql_flush(
                style, tables, reset_sequences=reset_sequences, allow_cascade=allow_cascade
            )
        tables = [table for table in tables if table not in KEPT]
        # A table whose rows a trigger refuses to delete (the append-only audit log) is
        # truncated: TRUNCATE fires no row trigger.
        refusing = self._tables_with_delete_triggers(tables)
        # Foreign keys are checked at commit (Django's are deferrable): any order works.
        statements = ["SET CONSTRAINTS ALL DEFERRED;"]
        statements += super().sql_flush(style, refusing) if refusing else []
        statements += [
            f"{style.SQL_KEYWORD('DELETE FROM')} {style.SQL_FIELD(self.quote_name(table))};"
            for table in tables
            if table not in refusing
        ]
        return statements

    def _tables_with_delete_triggers(self, tables: list[str]) -> list[str]:
        with self.connection.cursor() as cursor:
            cursor.execute(
                # tgtype bit 8: the trigger fires on DELETE (pg_trigger.h, TRIGGER_TYPE_DELETE).
                "SELECT DISTINCT c.relname FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid"
                " WHERE NOT t.tgisinternal AND t.tgtype & 8 <> 0 AND c.relname = ANY(%s)",
                [list(tables)],
            )
            return sorted(row[0] for row in cursor.fetchall())


class DatabaseWrapper(base.DatabaseWrapper):
    ops_class = DatabaseOperations
