"""The audit log is a hash chain: an edit, deletion or gap made past the app is found.

The test connection is the database owner, as a person with the owner role
would be: it can switch the append-only trigger off and rewrite history; the
chain (and ``verify_audit_log``) still tells.
"""

from __future__ import annotations

from io import StringIO

import pytest
from django.contrib.auth.models import Group
from django.core.management import call_command
from django.db import DatabaseError, connection, transaction
from rest_framework.test import APIClient

from beeos_console.auditlog import chain
from beeos_console.auditlog import services as audit
from beeos_console.auditlog.models import AuditEntry
from beeos_console.auditlog.services import Actor
from beeos_console.core import tokens
from beeos_console.projection import audit as projection_audit

from .factories import make_task, openapi_task

pytestmark = pytest.mark.django_db

ADA = Actor("ada")


def write(n: int) -> list[AuditEntry]:
    for i in range(n):
        audit.record(ADA, "task.cancel", "task", f"tsk_{i}", reason=f"stuck {i}")
    return list(AuditEntry.objects.order_by("seq"))


def as_owner(sql: str, params: list | None = None) -> None:
    """Rewrite history the way only the owner role can: past the append-only trigger."""
    with connection.cursor() as cursor:
        cursor.execute("ALTER TABLE console_auditentry DISABLE TRIGGER USER")
        cursor.execute(sql, params or [])
        cursor.execute("ALTER TABLE console_auditentry ENABLE TRIGGER USER")


def verify_command() -> tuple[int, str]:
    out, err = StringIO(), StringIO()
    try:
        call_command("verify_audit_log", stdout=out, stderr=err)
    except SystemExit as exc:
        return int(exc.code), err.getvalue()
    return 0, out.getvalue()


def test_every_write_path_links_its_entries():
    entries = write(3)
    make_task("running")  # the services' own entries, if any, join the same chain
    entries = list(AuditEntry.objects.order_by("seq"))
    assert [e.seq for e in entries] == list(range(1, len(entries) + 1))
    assert entries[0].prev_digest == ""
    for before, after in zip(entries, entries[1:], strict=False):
        assert after.prev_digest == before.digest and len(after.digest) == 64
    check = chain.verify()
    assert check.ok and check.entries == len(entries)
    assert verify_command() == (0, f"{check.describe()}\n")


def test_the_batch_ingest_path_is_chained_too(client, django_user_model):
    user = django_user_model.objects.create_user("chain-feeder")
    user.groups.add(Group.objects.get_or_create(name="feeder")[0])
    _, key = tokens.issue(user, "test")
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    tasks = [openapi_task("running") for _ in range(4)]
    api.post(
        "/api/v1/ingest/",
        {"records": [{"kind": "openapi_task", "data": t} for t in tasks]},
        format="json",
    )
    done = [{**t, "status": "completed", "updated_at": "2026-11-30T09:00:00Z"} for t in tasks]
    answer = api.post(
        "/api/v1/ingest/",
        {"records": [{"kind": "openapi_task", "data": t} for t in done]},
        format="json",
    )
    assert [r["result"] for r in answer.json()["results"]] == ["updated"] * 4
    assert AuditEntry.objects.count() == 4
    assert chain.verify().ok


@pytest.mark.parametrize(
    ("tamper", "problem"),
    [
        ("UPDATE console_auditentry SET reason = 'nothing to see' WHERE seq = 2", "changed"),
        ("DELETE FROM console_auditentry WHERE seq = 2", "missing"),
        (
            "UPDATE console_auditentry SET prev_digest = repeat('0', 64) WHERE seq = 3",
            "does not follow",
        ),
    ],
)
def test_an_edit_deletion_or_rewritten_link_is_named(tamper, problem):
    entries = write(4)
    as_owner(tamper)
    check = chain.verify()
    assert not check.ok and problem in check.problem
    code, said = verify_command()
    assert code == 1
    broken = 3 if problem == "does not follow" or problem == "missing" else 2
    assert f"entry #{broken}" in said
    assert entries[0].pk  # the entries before the break are untouched


def test_an_entry_written_with_the_chain_switched_off_is_found():
    write(2)
    with connection.cursor() as cursor:
        cursor.execute("ALTER TABLE console_auditentry DISABLE TRIGGER console_auditentry_chain")
        cursor.execute(
            "INSERT INTO console_auditentry (at, actor, actor_kind, action, object_kind,"
            " object_id, before, after, reason, detail, prev_digest, digest)"
            " VALUES (now(), 'eve', 'user', 'task.cancel', 'task', 'x', '{}', '{}', '', '{}',"
            " '', '')"
        )
        cursor.execute("ALTER TABLE console_auditentry ENABLE TRIGGER console_auditentry_chain")
    check = chain.verify()
    assert not check.ok and "outside the chain" in check.problem


def test_the_projection_audit_fails_on_a_broken_chain():
    write(3)
    report = projection_audit.sweep(check_audit_chain=True)
    assert report.categories["audit_chain_broken"].count == 0
    as_owner("UPDATE console_auditentry SET actor = 'mallory' WHERE seq = 1")
    report = projection_audit.sweep(check_audit_chain=True)
    assert report.failing and report.categories["audit_chain_broken"].count == 1
    out = StringIO()
    with pytest.raises(SystemExit):
        call_command("audit_projections", "--no-save", stdout=out, stderr=StringIO())
    assert "hash chain" in out.getvalue()


APP_ROLE = "console_app_test"


def as_app_role(statement: str) -> str:
    """Run one statement as the app's role; the error it met, or "" when it ran."""
    try:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(f"SET LOCAL ROLE {APP_ROLE}")
            cursor.execute(statement)
    except DatabaseError as exc:
        return str(exc)
    return ""


def test_the_app_role_may_append_but_never_rewrite_the_audit_log():
    write(2)
    call_command("grant_app_role", APP_ROLE, stdout=StringIO())
    assert as_app_role("SELECT count(*) FROM console_auditentry") == ""
    assert (
        as_app_role(
            "INSERT INTO console_auditentry (at, actor, actor_kind, action, object_kind,"
            " object_id, before, after, reason, detail, prev_digest, digest)"
            " VALUES (now(), 'app', 'system', 'task.cancel', 'task', 'y', '{}', '{}', '', '{}',"
            " '', '')"
        )
        == ""
    )
    assert "permission denied" in as_app_role("UPDATE console_auditentry SET reason = 'x'")
    assert "permission denied" in as_app_role("DELETE FROM console_auditentry")
    assert "permission denied" in as_app_role("TRUNCATE console_auditentry")
    assert "must be owner" in as_app_role(
        "ALTER TABLE console_auditentry DISABLE TRIGGER console_auditentry_append_only"
    )
    # Other console tables stay writable for the app.
    assert as_app_role("UPDATE tasks_task SET error = error") == ""
    assert chain.verify().ok and chain.verify().entries == 3
