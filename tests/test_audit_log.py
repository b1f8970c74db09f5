"""The audit log is append-only: the ORM refuses, and on PostgreSQL so does the database."""

from __future__ import annotations

import pytest
from django.db import DatabaseError, connection, transaction

from beeos_console.auditlog import services as auditlog
from beeos_console.auditlog.models import AppendOnlyError, AuditEntry
from beeos_console.auditlog.services import Actor

pytestmark = pytest.mark.django_db


@pytest.fixture
def entry() -> AuditEntry:
    return auditlog.record(
        Actor("olga-operator"),
        "task.cancel",
        "task",
        "tsk_1",
        before={"status": "processing"},
        after={"status": "cancelled"},
        reason="customer asked",
    )


def test_entry_is_written_whole(entry):
    stored = AuditEntry.objects.get()
    assert (stored.actor, stored.action, stored.object_id, stored.reason) == (
        "olga-operator",
        "task.cancel",
        "tsk_1",
        "customer asked",
    )
    assert stored.before == {"status": "processing"}
    assert stored.at is not None


def test_instance_save_after_create_is_refused(entry):
    entry.reason = "rewritten"
    with pytest.raises(AppendOnlyError):
        entry.save()
    assert AuditEntry.objects.get().reason == "customer asked"


def test_instance_delete_is_refused(entry):
    with pytest.raises(AppendOnlyError):
        entry.delete()
    assert AuditEntry.objects.count() == 1


def test_queryset_update_and_delete_are_refused(entry):
    with pytest.raises(AppendOnlyError):
        AuditEntry.objects.filter(pk=entry.pk).update(reason="x")
    with pytest.raises(AppendOnlyError):
        AuditEntry.objects.all().delete()
    assert AuditEntry.objects.get().reason == "customer asked"


@pytest.mark.parametrize(
    "sql",
    [
        "UPDATE console_auditentry SET reason = 'rewritten'",
        "DELETE FROM console_auditentry",
    ],
)
def test_database_trigger_refuses_raw_sql(entry, sql):
    assert connection.vendor == "postgresql"
    with (
        pytest.raises(DatabaseError, match="append-only"),
        transaction.atomic(),
        connection.cursor() as cursor,
    ):
        cursor.execute(sql)
    assert AuditEntry.objects.get().reason == "customer asked"
