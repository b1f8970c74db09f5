"""Data set up once for many tests (pytest-django's equivalent of ``setUpTestData``)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from django.db import transaction


@contextmanager
def rolled_back_at_end(django_db_blocker) -> Iterator[None]:
    """For a module- or class-scoped fixture: what it writes stays for the tests of its
    scope and is rolled back after the last one. Each of those tests runs in a savepoint
    inside this transaction (pytest-django's ``db``), so what one test writes is gone
    before the next. Not for ``transactional_db`` or ``live_server`` tests (they commit,
    and other connections do not see these rows)."""
    with django_db_blocker.unblock(), transaction.atomic():
        yield
        transaction.set_rollback(True)
