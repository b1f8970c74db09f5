"""The suite's database backend: Django's PostgreSQL backend, flushing only what a test
wrote.

After each transactional test (``transaction=True``, every browser test) Django
empties every table with one ``TRUNCATE`` of all 32 of them, which gives each table
and index a new file: 0.2-0.4 s a test here. This flush truncates only the tables
that hold rows, usually a handful: the same ``TRUNCATE``, so the tables come back
as Django's flush leaves them, planner statistics included. (A ``DELETE`` instead
left emptied tables whose statistics said "no rows" while a later test's own rows
were there, and the sync test's queries then took 0.5-1 s each.)
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
        written = self._tables_with_rows([table for table in tables if table not in KEPT])
        # CASCADE: a table whose rows are gone may be referenced by an empty one.
        return super().sql_flush(style, written, allow_cascade=True) if written else []

    def _tables_with_rows(self, tables: list[str]) -> list[str]:
        if not tables:
            return []
        probes = " UNION ALL ".join(
            f"SELECT %s WHERE EXISTS (SELECT 1 FROM {self.quote_name(table)})" for table in tables
        )
        with self.connection.cursor() as cursor:
            cursor.execute(probes, tables)
            return [row[0] for row in cursor.fetchall()]


class DatabaseWrapper(base.DatabaseWrapper):
    ops_class = DatabaseOperations
