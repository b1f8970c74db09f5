"""Tasks carry the error code the wire gives (issue #11, point 5).

OpenAPI tasks: the contract's ``error`` string, the error envelope's object
``{"code", "message"}`` or a flat ``error_code``; A2A tasks: the google.rpc
ErrorInfo ``reason`` (seed 003) a status message carries in its metadata or a
data part. Parsed at the edge (a bad shape is a field error, never a 500),
written by both write paths, shown beside the error text, in the API, and
filterable on the task list (HTML and API).
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from rest_framework.test import APIClient

from beeos_console.auditlog.services import Actor
from beeos_console.core import tokens
from beeos_console.ingest.services import ingest_record, ingest_records
from beeos_console.mirror.edge import IngestError
from tasks.models import Task
from tasks.services.snapshots import parse_a2a_task, parse_openapi_task

from .factories import BASE, iso, openapi_task

pytestmark = pytest.mark.django_db

FEEDER = Actor.feeder("error-code-feeder")
ERROR_INFO = "type.googleapis.com/google.rpc.ErrorInfo"


def a2a_task(task_id: str, state: str = "TASK_STATE_FAILED", **message: Any) -> dict[str, Any]:
    status: dict[str, Any] = {"state": state, "timestamp": iso(BASE)}
    if message:
        status["message"] = {"messageId": f"{task_id}-status", "role": "ROLE_AGENT", **message}
    return {
        "id": task_id,
        "contextId": f"ctx_{task_id}",
        "status": status,
        "target_agent_id": "agt_travel",
        "caller_agent_id": "agt_caller",
    }


def error_info(reason: Any) -> dict[str, Any]:
    return {"@type": ERROR_INFO, "reason": reason, "metadata": {"code": "-32011"}}


# --- parsing at the edge ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("extra", "error", "code"),
    [
        ({"error": "tool crashed"}, "tool crashed", ""),  # the contract's string: no code
        (
            {"error": {"type": "api_error", "code": "service_timeout", "message": "gave up"}},
            "gave up",
            "service_timeout",
        ),
        ({"error": "agent said no", "error_code": "agent_reply_error"}, "agent said no", ""),
        ({"error": {"code": -32011, "message": "timed out"}}, "timed out", "-32011"),
        ({"error": {"code": "internal_error"}}, "", "internal_error"),
        ({}, "", ""),
    ],
)
def test_an_openapi_task_keeps_the_code_the_wire_gives(extra, error, code):
    data = openapi_task("failed", **extra)
    snapshot = parse_openapi_task(data)
    expected_code = code or extra.get("error_code", "")
    assert (snapshot.fields["error"], snapshot.fields["error_code"]) == (error, expected_code)
    assert snapshot.payload == data  # the raw payload stays verbatim


@pytest.mark.parametrize(
    ("extra", "field"),
    [
        ({"error": 42}, "error"),
        ({"error": ["a"]}, "error"),
        ({"error_code": {"x": 1}}, "error_code"),
        ({"error_code": "x" * 129}, "error_code"),
        ({"error": {"code": True, "message": "?"}}, "error.code"),
        ({"error": {"code": "c", "message": 7}}, "error.message"),
    ],
)
def test_an_invalid_openapi_error_is_a_field_error(extra, field):
    with pytest.raises(IngestError) as caught:
        parse_openapi_task(openapi_task("failed", **extra))
    assert field in caught.value.errors


@pytest.mark.parametrize(
    ("message", "code"),
    [
        ({"parts": [{"text": "why"}]}, ""),
        (
            {"parts": [{"text": "why"}], "metadata": {"error_code": "TASK_TIMED_OUT"}},
            "TASK_TIMED_OUT",
        ),
        (
            {"parts": [{"text": "why"}], "metadata": {"details": error_info("AGENT_BUSY")}},
            "AGENT_BUSY",
        ),
        (
            {"parts": [{"text": "why"}, {"data": error_info("LOST_AFTER_DISPATCH")}]},
            "LOST_AFTER_DISPATCH",
        ),
        (
            {"parts": [{"kind": "data", "data": [{"k": 1}, error_info("TASK_TIMED_OUT")]}]},
            "TASK_TIMED_OUT",
        ),
        (
            {"parts": [{"data": {"error": {"code": -32011, "data": [error_info("TIMED_OUT")]}}}]},
            "TIMED_OUT",
        ),
        ({"parts": [{"data": {"error": {"code": -32011, "message": "timed out"}}}]}, "-32011"),
        ({"parts": [{"data": {"rows": 3}}]}, ""),  # data that is no error: no code
    ],
)
def test_an_a2a_status_message_gives_its_error_info_reason(message, code):
    snapshot = parse_a2a_task(a2a_task("a2a_code", **message))
    assert snapshot.fields["error_code"] == code


@pytest.mark.parametrize(
    ("message", "field"),
    [
        ({"metadata": {"error_code": 1.5}}, "status.message.metadata.error_code"),
        ({"metadata": {"info": error_info(None)}}, "status.message.metadata.info.reason"),
        ({"parts": [{"data": error_info(7)}]}, "status.message.parts[0].data.reason"),
        ({"parts": [{"data": [error_info("x" * 200)]}]}, "status.message.parts[0].data[0].reason"),
    ],
)
def test_an_invalid_a2a_error_code_is_a_field_error(message, field):
    with pytest.raises(IngestError) as caught:
        parse_a2a_task(a2a_task("a2a_bad", **message))
    assert field in caught.value.errors


def test_a_status_message_of_another_shape_is_not_refused_for_it():
    """The code is looked for, never demanded: an odd status message stays storable."""
    data = a2a_task("a2a_odd")
    data["status"]["message"] = "free text"
    assert parse_a2a_task(data).fields["error_code"] == ""


# --- both write paths --------------------------------------------------------------------


def records() -> list[dict[str, Any]]:
    code_info = {
        "parts": [{"text": "lost"}],
        "metadata": {"info": error_info("LOST_AFTER_DISPATCH")},
    }
    return [
        {"kind": "openapi_task", "data": openapi_task("running", task_id="tsk_code_a")},
        {
            "kind": "openapi_task",
            "data": openapi_task(
                "failed",
                task_id="tsk_code_a",
                minutes_ago=1,
                error={"code": "service_timeout", "message": "gave up"},
            ),
        },
        {
            "kind": "openapi_task",
            "data": openapi_task("failed", task_id="tsk_code_b", error_code="agent_reply_error"),
        },
        {"kind": "a2a_task", "data": a2a_task("a2a_code_c", **code_info)},
        {"kind": "openapi_task", "data": openapi_task("failed", task_id="tsk_bad", error=3)},
    ]


def stored_codes() -> dict[str, tuple[str, str]]:
    return {t.task_id: (t.error_code, t.error) for t in Task.objects.all()}


EXPECTED = {
    "tsk_code_a": ("service_timeout", "gave up"),
    "tsk_code_b": ("agent_reply_error", ""),
    "a2a_code_c": ("LOST_AFTER_DISPATCH", "lost"),
}


def test_both_write_paths_store_the_error_code():
    one = [ingest_record(i, r, FEEDER) for i, r in enumerate(copy.deepcopy(records()))]
    assert stored_codes() == EXPECTED
    Task.objects.all().delete()

    batched = ingest_records(copy.deepcopy(records()), FEEDER)

    assert stored_codes() == EXPECTED
    assert [a["result"] for a in batched] == [a["result"] for a in one]
    assert batched[-1]["result"] == "rejected" and "error" in batched[-1]["errors"]


def test_a_newer_snapshot_without_a_code_clears_it():
    ingest_records(copy.deepcopy(records()[:2]), FEEDER)
    assert Task.objects.get(task_id="tsk_code_a").error_code == "service_timeout"
    # An older one never overwrites it; a newer one is the truth, code or not.
    ingest_record(0, records()[0], FEEDER)
    assert Task.objects.get(task_id="tsk_code_a").error_code == "service_timeout"
    newer = openapi_task("failed", task_id="tsk_code_a", minutes_ago=0, error="plain")
    ingest_records([{"kind": "openapi_task", "data": newer}], FEEDER)
    assert (Task.objects.get(task_id="tsk_code_a").error_code, "plain") == ("", "plain")


# --- shown and filterable ---------------------------------------------------------------------


@pytest.fixture
def coded(support_user) -> None:
    ingest_records(copy.deepcopy(records()), FEEDER)


@pytest.fixture
def support_api(support_user) -> APIClient:
    _, key = tokens.issue(support_user, "test")
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    return api


def test_the_ingest_api_answers_a_bad_code_with_field_errors(support_user, django_user_model):
    from django.contrib.auth.models import Group

    feeder = django_user_model.objects.create_user("code-feeder")
    feeder.groups.add(Group.objects.get_or_create(name="feeder")[0])
    _, key = tokens.issue(feeder, "test")
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    body = {
        "records": [{"kind": "a2a_task", "data": a2a_task("a2a_x", metadata={"error_code": []})}]
    }
    response = api.post("/api/v1/ingest/", json.dumps(body), content_type="application/json")
    assert response.status_code == 200
    (answer,) = response.json()["results"]
    assert answer["result"] == "rejected"
    assert "status.message.metadata.error_code" in answer["errors"]


def test_the_detail_page_shows_the_code_beside_the_error(coded, client, support_user):
    client.force_login(support_user)
    page = client.get("/tasks/tsk_code_a/").content.decode()
    assert '<code class="error-code">service_timeout</code>' in page
    assert page.index("error-code") < page.index("gave up")
    assert "?error_code=service_timeout" in page
    a2a = client.get("/tasks/a2a_code_c/").content.decode()
    assert '<code class="error-code">LOST_AFTER_DISPATCH</code>' in a2a
    plain = client.get("/tasks/tsk_code_b/").content.decode()
    assert '<code class="error-code">agent_reply_error</code>' in plain


def test_the_api_carries_and_filters_the_code(coded, support_api):
    rows = support_api.get("/api/v1/tasks/").json()["results"]
    assert {r["task_id"]: r["error_code"] for r in rows} == {k: v[0] for k, v in EXPECTED.items()}
    found = support_api.get("/api/v1/tasks/?error_code=service_timeout").json()["results"]
    assert [r["task_id"] for r in found] == ["tsk_code_a"]
    both = support_api.get(
        "/api/v1/tasks/?error_code=LOST_AFTER_DISPATCH&error_code=agent_reply_error"
    ).json()["results"]
    assert {r["task_id"] for r in both} == {"a2a_code_c", "tsk_code_b"}
    detail = support_api.get("/api/v1/tasks/tsk_code_a/").json()
    assert (detail["error_code"], detail["error"]) == ("service_timeout", "gave up")
    # Any value is searchable, even one no suggestion lists.
    assert support_api.get("/api/v1/tasks/?error_code=-32011").json()["results"] == []


def test_the_html_list_filters_on_the_code_and_its_panel_offers_it(coded, client, support_user):
    client.force_login(support_user)
    page = client.get("/tasks/?error_code=agent_reply_error").content.decode()
    assert "tsk_code_b" in page and "tsk_code_a" not in page
    assert "Error code" in page
    assert 'name="error_code" value="agent_reply_error"' in page
