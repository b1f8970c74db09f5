"""The suite's flush (``tests/postgres/``): after a transactional test every table is
empty again, the append-only audit log included, and what ``post_migrate`` makes
(content types, permissions) is still there."""

from __future__ import annotations

import pytest
from django.apps import apps
from django.contrib.auth.models import Permission
from django.contrib.contenttypes.models import ContentType
from django.core.management import call_command
from django.db import connections

from beeos_console.auditlog.services import Actor, record

from .factories import make_operation, make_task


@pytest.mark.django_db(transaction=True)
def test_the_flush_empties_every_table_but_what_post_migrate_makes(operator_user):
    assert type(connections["default"]).__module__ == "tests.postgres.base"
    task = make_task("running")
    make_operation("outcome_unknown")
    # A row the audit log's trigger refuses to DELETE.
    record(Actor.of_user(operator_user), "task.cancel", "task", task.task_id, reason="flush")
    permissions, content_types = Permission.objects.count(), ContentType.objects.count()

    # What TransactionTestCase runs after each test.
    call_command(
        "flush", verbosity=0, interactive=False, reset_sequences=False, allow_cascade=False
    )

    left = {
        model._meta.db_table
        for model in apps.get_models(include_auto_created=True)
        if model._meta.managed and not model._meta.proxy and model.objects.exists()
    }
    assert left == {"django_content_type", "auth_permission"}
    assert (Permission.objects.count(), ContentType.objects.count()) == (
        permissions,
        content_types,
    )
