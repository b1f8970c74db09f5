"""Django's database sessions (``SESSION_ENGINE``), read with one written-out SELECT.

Every signed-in request reads its session. Django's store builds that query with
the ORM (``Session.objects.get(...)``) on every request, which costs several times
the query itself; this store sends the same SELECT, written out once from the
model's names, with the session key and the current time as its parameters.
Expired and unknown sessions are treated exactly as Django treats them; writes,
``exists`` and the async reads stay Django's.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from django.contrib.sessions.backends import db
from django.db import connections, router
from django.utils import timezone


@cache
def _read_sql(db_alias: str, table: str, key_column: str, data_column: str, expiry: str) -> str:
    q = connections[db_alias].ops.quote_name
    return (
        f"SELECT {q(data_column)} FROM {q(table)} WHERE {q(key_column)} = %s AND {q(expiry)} > %s"
    )


class SessionStore(db.SessionStore):
    def _get_session_from_db(self) -> Any:
        model = self.model
        alias = router.db_for_read(model)
        meta = model._meta
        sql = _read_sql(
            alias,
            meta.db_table,
            meta.get_field("session_key").column,
            meta.get_field("session_data").column,
            meta.get_field("expire_date").column,
        )
        with connections[alias].cursor() as cursor:
            cursor.execute(sql, [self.session_key, timezone.now()])
            row = cursor.fetchone()
        if row is None:
            self._session_key = None  # as Django's store does for a missing session
            return None
        return model(session_key=self.session_key, session_data=row[0])
