"""List rows loaded with ``.only()`` (``mirror.models.Projected.from_db``) are the
instances Django would build: the same loaded values, deferred fields read on access,
saved as updates."""

from __future__ import annotations

import pytest
from django.db import models

from operations.models import RuntimeOperation
from operations.tables import OperationTable
from tasks.models import Task
from tasks.tables import TaskTable
from tests.factories import make_operation, make_task

pytestmark = pytest.mark.django_db


def django_built(model, row):
    """The row as Django's own ``from_db`` builds it (loaded names, values)."""
    names = [f.attname for f in model._meta.concrete_fields if f.attname in row.__dict__]
    values = [row.__dict__[name] for name in names]
    return models.Model.from_db.__func__(model, "default", names, values)


def loaded(instance) -> dict:
    return {k: v for k, v in instance.__dict__.items() if k != "_state"}


@pytest.mark.parametrize(
    ("model", "make", "fields"),
    [
        (RuntimeOperation, make_operation, OperationTable.fields),
        (Task, make_task, TaskTable.fields),
    ],
)
def test_a_list_row_is_the_instance_django_builds(model, make, fields):
    make("failed")
    row = model.objects.only(*fields).get()
    reference = django_built(model, row)
    assert loaded(row) == loaded(reference)
    assert set(loaded(row)) < {f.attname for f in model._meta.concrete_fields}
    assert (row._state.adding, row._state.db) == (False, "default")
    assert row.get_deferred_fields() == reference.get_deferred_fields() != set()
    full = model.objects.get()
    deferred = next(iter(row.get_deferred_fields()))
    assert getattr(row, deferred) == getattr(full, deferred)  # read on access
    row.status = "cancelled"
    row.save(update_fields=["status"])
    assert model.objects.count() == 1
    assert model.objects.get().status == "cancelled"
