"""Ids can't redirect actions: refused at the edge when they could read or resolve
as another object's URL (dot segments, bidi overrides, zero-width characters)."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth.models import Group
from rest_framework.test import APIClient

from beeos_console.core import tokens
from tasks.models import Task

from .factories import openapi_task, operation_snapshot

pytestmark = pytest.mark.django_db

REFUSED_IDS = [
    "../operations/op_1",
    "tsk/../op",
    "./tsk",
    "tsk/.",
    "..",
    "tsk\u202eexe.txt",  # right-to-left override
    "tsk\u2066x\u2069",  # isolates
    "tsk\u200bx",  # zero-width space
    "\ufefftsk",  # zero-width no-break space
    "tsk\nx",
]
ACCEPTED_IDS = ["tsk/with/slash", "tsk...dots", "a.b.c", "tsk-ünïcode-名前"]


@pytest.fixture
def feeder_api(django_user_model) -> APIClient:
    user = django_user_model.objects.create_user("hostile-feeder")
    user.groups.add(Group.objects.get_or_create(name="feeder")[0])
    _, key = tokens.issue(user, "test")
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    return api


def ingest(api: APIClient, records: list) -> list[dict]:
    response = api.post(
        "/api/v1/ingest/", data=json.dumps({"records": records}), content_type="application/json"
    )
    assert response.status_code == 200
    return response.json()["results"]


@pytest.mark.parametrize("bad", REFUSED_IDS, ids=repr)
def test_hostile_ids_are_refused_on_every_kind_and_the_rest_lands(feeder_api, bad):
    records = [
        {"kind": "openapi_task", "data": openapi_task("running", task_id=bad)},
        {"kind": "runtime_operation", "data": operation_snapshot("running", id=bad)},
        {"kind": "openapi_task", "data": openapi_task("running", task_id="tsk_fine")},
    ]
    answers = ingest(feeder_api, records)
    assert [a["result"] for a in answers] == ["rejected", "rejected", "created"]
    assert "task_id" in answers[0]["errors"] and "id" in answers[1]["errors"]
    assert not Task.objects.filter(task_id=bad).exists()


@pytest.mark.parametrize("good", ACCEPTED_IDS)
def test_ordinary_ids_with_slashes_and_dots_are_kept(feeder_api, good):
    answers = ingest(feeder_api, [{"kind": "openapi_task", "data": openapi_task(task_id=good)}])
    assert answers[0]["result"] == "created"
    assert Task.objects.filter(task_id=good).exists()
