"""Hostile input never makes the console answer 5xx (issue #13, points 3 and 5).

A corpus — deep nesting, huge and nested long strings, NUL and lone surrogates
deep inside JSON, non-finite and oversized numbers, forged and garbled cursors,
oversize bodies, wrong content types, non-object JSON, formula cells — is sent
to every endpoint: ingest, the signed webhook, task and operation cancels (REST
and HTML form posts), every list (HTML and API) and the detail pages. Each
answer is a 4xx (JSON under ``/api/``) or the right result, never a 5xx; a bad
record is refused with a field error naming its path while the valid records of
the same call still land; every CSV export neutralises formula cells.
"""

from __future__ import annotations

import base64
import contextlib
import csv
import datetime as dt
import hashlib
import hmac
import io
import itertools
import json
import time
from typing import Any

import pytest
from django.contrib.auth.models import Group
from django.core.management import call_command
from django.test import Client
from rest_framework.test import APIClient

from beeos_console.auditlog.services import Actor, record
from beeos_console.core import tokens
from beeos_console.core.exports import safe_cell
from beeos_console.core.jsonbody import BadJSON, loads
from operations.models import RuntimeOperation, RuntimeOperationEvent
from tasks.models import Artifact, Message, Task

from .factories import BASE, iso, make_a2a_task, make_operation, make_task, openapi_task
from .factories import operation_snapshot as op_snapshot

pytestmark = pytest.mark.django_db

SECRET = "whsec_" + "k" * 40
INGEST = "/api/v1/ingest/"
WEBHOOK = "/api/v1/webhooks/beeos/"
TEXT_MAX = 1_000_000  # beeos_console.mirror.edge: free text (a part's text, a message body)


# --- clients -------------------------------------------------------------------------


@pytest.fixture
def everyone(django_user_model):
    user = django_user_model.objects.create_user("hostile-everyone", is_staff=True)
    for role in ("support", "operator", "admin", "feeder"):
        user.groups.add(Group.objects.get_or_create(name=role)[0])
    return user


@pytest.fixture
def api(everyone) -> APIClient:
    """A token client that sees a 500 as a response (the handler's), not an exception."""
    _, key = tokens.issue(everyone, "hostile")
    client = APIClient()
    client.raise_request_exception = False
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    return client


@pytest.fixture
def browser(everyone) -> Client:
    client = Client(raise_request_exception=False)
    client.force_login(everyone)
    return client


@pytest.fixture(autouse=True)
def webhook_secret(settings):
    settings.BEEOS_WEBHOOK_SECRET = SECRET


def post_raw(
    client: Client,
    url: str,
    body: bytes | str,
    content_type: str = "application/json",
    **extra: Any,
):
    return client.generic("POST", url, body, content_type=content_type, **extra)


def signed(body: bytes) -> dict[str, str]:
    ts = str(int(time.time()))
    mac = hmac.new(SECRET.encode(), ts.encode() + b"." + body, hashlib.sha256).hexdigest()
    return {"HTTP_X_BEEOS_SIGNATURE": f"t={ts},v1={mac}"}


def assert_json_4xx(response, *statuses: int) -> dict[str, Any]:
    assert 400 <= response.status_code < 500, (response.status_code, response.content[:300])
    if statuses:
        assert response.status_code in statuses, (response.status_code, response.content[:300])
    assert response["Content-Type"].startswith("application/json"), response["Content-Type"]
    return response.json()


def deep(depth: int, leaf: str = "1") -> str:
    return "[" * depth + leaf + "]" * depth


# --- one bad record among good ones: refused with its path, the rest lands ------------


def a2a(**extra: Any) -> dict[str, Any]:
    n = next(_counter)
    data: dict[str, Any] = {
        "id": f"a2a_hostile_{n}",
        "contextId": f"ctx_hostile_{n}",
        "status": {"state": "TASK_STATE_WORKING", "timestamp": iso(BASE)},
        "target_agent_id": "agt_travel",
        "history": [
            {"messageId": f"m_{n}_{i}", "role": "user", "parts": [{"text": f"hello {i}"}]}
            for i in range(4)
        ],
        "artifacts": [
            {
                "artifactId": f"art_{n}",
                "name": "report",
                "parts": [{"file": {"name": "report.pdf", "uri": "https://x.test/r.pdf"}}],
            }
        ],
    }
    data.update(extra)
    return data


def message(**extra: Any) -> dict[str, Any]:
    n = next(_counter)
    data = {
        "id": f"msg_hostile_{n}",
        "conversation_id": "conv_hostile",
        "type": "agent_reply",
        "state": "completed",
        "created_at": iso(BASE),
        "parts": [{"type": "text", "text": "hi"}],
    }
    data.update(extra)
    return data


def event(operation_id: str, **payload: Any) -> dict[str, Any]:
    n = next(_counter)
    return {
        "id": str(5000 + n),
        "operationId": operation_id,
        "method": "session/set_model",
        "event": {
            "type": "runtime_operation_progress",
            "sequence": "4",
            "recordedAt": iso(BASE + dt.timedelta(seconds=n)),
            "payload": payload,
        },
    }


_counter = itertools.count(1)


def nested(depth: int) -> Any:
    value: Any = "leaf"
    for _ in range(depth):
        value = {"k": value}
    return value


def _a2a_with(mutate) -> dict[str, Any]:
    data = a2a()
    mutate(data)
    return data


LONG_TEXT = "x" * (TEXT_MAX + 1)

# (kind, data, the path the field error names)
BAD_RECORDS = [
    pytest.param(
        "a2a_task",
        _a2a_with(lambda d: d["history"][3]["parts"][0].update(text=LONG_TEXT)),
        "history[3].parts[0].text",
        id="history-part-text-too-long",
    ),
    pytest.param(
        "a2a_task",
        _a2a_with(lambda d: d["history"][0].update(contextId="c" * 300)),
        "history[0].contextId",
        id="history-contextId-too-long-for-its-column",
    ),
    pytest.param(
        "a2a_task",
        _a2a_with(lambda d: d["history"][0].update(contextId={"k": "c" * 300})),
        "history[0].contextId",
        id="history-contextId-not-a-string",
    ),
    pytest.param(
        "a2a_task",
        _a2a_with(lambda d: d["artifacts"][0].update(metadata=["not", "an", "object"])),
        "artifacts[0].metadata",
        id="artifact-metadata-not-an-object",
    ),
    pytest.param(
        "a2a_task",
        _a2a_with(lambda d: d["artifacts"][0]["parts"][0]["file"].update(name="n" * 300)),
        "artifacts[0].parts[0].file.name",
        id="artifact-file-name-too-long",
    ),
    pytest.param(
        "a2a_task",
        _a2a_with(lambda d: d["artifacts"][0]["parts"][0]["file"].update(uri="u" * 9000)),
        "artifacts[0].parts[0].file.uri",
        id="artifact-file-uri-too-long",
    ),
    pytest.param(
        "a2a_task",
        _a2a_with(lambda d: d["artifacts"][0].update(description="before\x00after")),
        "artifacts[0].description",
        id="artifact-description-NUL",
    ),
    pytest.param(
        "a2a_task",
        _a2a_with(lambda d: d["history"][1].update(metadata={"note": "lone \ud800 surrogate"})),
        "history[1].metadata.note",
        id="history-metadata-lone-surrogate",
    ),
    pytest.param(
        "a2a_task",
        _a2a_with(lambda d: d["history"][2]["parts"].append({"data": {"k\x00ey": 1}})),
        "history[2].parts[1].data",
        id="NUL-in-a-nested-key",
    ),
    pytest.param(
        "a2a_task",
        _a2a_with(
            lambda d: d["status"].update(message={"parts": [{"text": "x" * (TEXT_MAX + 1)}]})
        ),
        "status.message.parts[0].text",
        id="status-message-text-too-long",
    ),
    pytest.param(
        "a2a_task",
        _a2a_with(lambda d: d["artifacts"][0].update(name={"not": "a string"})),
        "artifacts[0].name",
        id="artifact-name-not-a-string",
    ),
    pytest.param(
        "openapi_task",
        openapi_task(metadata={"ticket": {"deep": ["ok", "bad\x00"]}}),
        "metadata.ticket.deep[1]",
        id="metadata-NUL-deep",
    ),
    pytest.param(
        "openapi_task",
        openapi_task(result={"x": ["__INF__"]}),
        "result.x[0]",
        id="non-finite-number",
    ),
    pytest.param(
        "openapi_task",
        openapi_task(error_code=10**200),
        "error_code",
        id="integer-error-code-too-long-for-its-column",
    ),
    pytest.param(
        "openapi_task",
        openapi_task(metadata=nested(40)),
        "metadata",
        id="nested-too-deep-inside-a-record",
    ),
    pytest.param(
        "openapi_task",
        openapi_task(metadata={"items": list(range(10_001))}),
        "metadata.items",
        id="list-too-long",
    ),
    pytest.param(
        "openapi_task",
        openapi_task(metadata={"k" * 300: 1}),
        "metadata",
        id="key-too-long",
    ),
    pytest.param(
        "message",
        message(parts=[{"type": "data", "data": {"k": "lone \udfff"}}]),
        "parts[0].data.k",
        id="message-part-data-surrogate",
    ),
    pytest.param(
        "message",
        message(content={"blocks": [{"text": LONG_TEXT}]}),
        "content.blocks[0].text",
        id="message-content-text-too-long",
    ),
    pytest.param(
        "runtime_operation",
        op_snapshot("failed", error={"code": "X", "context": {"k": "a\x00b"}}),
        "error.context.k",
        id="operation-error-context-NUL",
    ),
    pytest.param(
        "runtime_operation_event",
        "EVENT_LONG",
        "event.payload.text",
        id="event-payload-text-too-long",
    ),
    pytest.param(
        "runtime_operation_event",
        "EVENT_NUL",
        "event.payload.detail.why",
        id="event-payload-NUL",
    ),
]


@pytest.mark.parametrize(("kind", "data", "path"), BAD_RECORDS)
def test_a_bad_nested_field_rejects_its_record_with_its_path_and_the_rest_lands(
    api, kind, data, path
):
    if data == "EVENT_LONG":
        data = event(make_operation("running").operation_id, text=LONG_TEXT)
    elif data == "EVENT_NUL":
        data = event(make_operation("running").operation_id, detail={"why": "\x00"})
    good_task = openapi_task()
    good_a2a = a2a()
    records = [
        {"kind": "openapi_task", "data": good_task},
        {"kind": kind, "data": data},
        {"kind": "a2a_task", "data": good_a2a},
    ]
    body = json.dumps({"records": records}).replace('"__INF__"', "1e400")
    response = post_raw(api, INGEST, body)
    assert response.status_code == 200, response.content[:500]
    results = response.json()["results"]
    assert [r["result"] for r in results] == ["created", "rejected", "created"], results
    errors = results[1]["errors"]
    # The path itself, or (too deep) a path under it.
    assert any(name == path or name.startswith((f"{path}.", f"{path}[")) for name in errors), errors
    # The valid records landed, children included; nothing of the bad one did.
    assert Task.objects.filter(task_id=good_task["task_id"]).exists()
    assert Message.objects.filter(message_id__startswith=f"m_{good_a2a['id'].split('_')[-1]}_")
    assert Artifact.objects.filter(task__task_id=good_a2a["id"]).count() == 1
    bad_id = data.get("id") or data.get("task_id")
    if kind in ("a2a_task", "openapi_task"):
        assert not Task.objects.filter(task_id=bad_id).exists()
    if kind == "runtime_operation":
        assert not RuntimeOperation.objects.filter(operation_id=bad_id).exists()
    if kind == "runtime_operation_event":
        assert not RuntimeOperationEvent.objects.filter(event_id=int(data["id"])).exists()


def test_a_record_with_many_bad_strings_gets_a_bounded_error_list(api):
    data = openapi_task(metadata={f"k{i}": "\x00" for i in range(5000)})
    response = post_raw(
        api, INGEST, json.dumps({"records": [{"kind": "openapi_task", "data": data}]})
    )
    errors = response.json()["results"][0]["errors"]
    assert len(errors) <= 21 and sum(len(v) for v in errors.values()) <= 21


def test_nested_values_within_the_limits_are_stored_verbatim(api):
    data = a2a()
    data["history"][0]["parts"][0]["text"] = "y" * TEXT_MAX
    data["metadata"] = {"emoji": "🐝", "deep": nested(20), "numbers": [1, -2.5, 10**30]}
    response = post_raw(api, INGEST, json.dumps({"records": [{"kind": "a2a_task", "data": data}]}))
    assert response.json()["results"][0]["result"] == "created", response.json()
    task = Task.objects.get(task_id=data["id"])
    assert task.metadata == data["metadata"]
    assert len(Message.objects.get(message_id=data["history"][0]["messageId"]).body) == TEXT_MAX


# --- whole bodies: nesting, non-object JSON, numbers, encodings, sizes, content types --


def _task_cancel_url() -> str:
    return f"/api/v1/tasks/{make_task('running').task_id}/cancel"


def _operation_cancel_url() -> str:
    return f"/api/v1/operations/{make_operation('running').operation_id}/cancel"


JSON_ENDPOINTS = ["ingest", "webhook", "task-cancel", "operation-cancel"]


def _url(endpoint: str) -> str:
    return {
        "ingest": lambda: INGEST,
        "webhook": lambda: WEBHOOK,
        "task-cancel": _task_cancel_url,
        "operation-cancel": _operation_cancel_url,
    }[endpoint]()


def send(
    api: APIClient, endpoint: str, body: bytes | str, content_type="application/json", **extra: Any
):
    url = _url(endpoint)
    raw = body.encode("utf-8", "surrogatepass") if isinstance(body, str) else body
    headers = signed(raw) if endpoint == "webhook" else {}
    return post_raw(api, url, raw, content_type, **headers, **extra)


BAD_BODIES = [
    pytest.param(deep(100_000), id="100k-deep-array"),
    pytest.param('{"a":' * 50_000 + "1" + "}" * 50_000, id="50k-deep-object"),
    pytest.param(deep(65), id="depth-65"),
    pytest.param('{"records": [' + deep(70) + "]}", id="deep-inside-the-envelope"),
    pytest.param("[]", id="array"),
    pytest.param('"records"', id="string"),
    pytest.param("42", id="number"),
    pytest.param("null", id="null"),
    pytest.param('{"records": [], "x": NaN}', id="NaN-literal"),
    pytest.param('{"records": [], "x": -Infinity}', id="Infinity-literal"),
    pytest.param('{"records": [], "x": ' + "9" * 5000 + "}", id="5000-digit-integer"),
    pytest.param('{"records": [', id="truncated"),
    pytest.param(b'{"records": "\xff\xfe"}', id="invalid-utf-8"),
    pytest.param("", id="empty"),
]


@pytest.mark.parametrize("endpoint", JSON_ENDPOINTS)
@pytest.mark.parametrize("body", BAD_BODIES)
def test_bad_json_bodies_are_a_json_4xx(api, endpoint, body):
    # A cancel body that is JSON but no object carries no reason: a 400 as well.
    assert_json_4xx(send(api, endpoint, body), 400)


@pytest.mark.parametrize("endpoint", JSON_ENDPOINTS)
def test_depth_64_is_still_accepted_by_the_parser(api, endpoint):
    body = '{"reason": "ok", "records": [], "x": ' + deep(62) + "}"
    response = send(api, endpoint, body)
    assert response.status_code < 500
    if endpoint == "ingest":
        assert response.status_code == 200, response.content[:300]


@pytest.mark.parametrize("endpoint", JSON_ENDPOINTS)
def test_oversize_bodies_are_a_json_413(api, endpoint, settings):
    settings.INGEST_MAX_BYTES = 10_000
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 10_000
    body = json.dumps({"reason": "r" * 20_000, "records": []})
    assert_json_4xx(send(api, endpoint, body), 413)


@pytest.mark.parametrize("endpoint", JSON_ENDPOINTS)
@pytest.mark.parametrize(
    "content_type",
    [
        "text/plain",
        "multipart/form-data",  # no boundary
        "multipart/form-data; boundary=xyz",
        "application/x-www-form-urlencoded",
        "application/xml",
    ],
)
def test_wrong_content_types_are_a_json_4xx(api, endpoint, content_type):
    body = json.dumps({"reason": "x", "records": []})
    response = send(
        api, endpoint, "--xyz\r\nbroken" if "boundary" in content_type else body, content_type
    )
    if endpoint == "webhook" and response.status_code == 200:
        return  # the receiver reads the signed bytes whatever the header says
    assert_json_4xx(response)


@pytest.mark.parametrize("endpoint", JSON_ENDPOINTS)
def test_too_many_form_fields_are_a_json_4xx(api, endpoint, settings):
    settings.DATA_UPLOAD_MAX_NUMBER_FIELDS = 10
    body = "&".join(f"f{i}=x" for i in range(50))
    response = send(api, endpoint, body, "application/x-www-form-urlencoded")
    if endpoint == "webhook" and response.status_code in (200, 400):
        return
    assert_json_4xx(response)


@pytest.mark.parametrize("endpoint", ["task-cancel", "operation-cancel"])
@pytest.mark.parametrize(
    "reason",
    ["before\x00after", "lone \ud800", {"nested": "object"}, ["list"], 42, "r" * 100_000, "  "],
    ids=["NUL", "surrogate", "object", "list", "number", "huge", "blank"],
)
def test_hostile_cancel_reasons_are_refused(api, endpoint, reason):
    url = _url(endpoint)
    response = post_raw(api, url, json.dumps({"reason": reason}))
    body = assert_json_4xx(response, 400)
    assert "reason" in body["detail"].lower()
    assert Task.objects.filter(status="cancelled").count() == 0


@pytest.mark.parametrize("endpoint", ["task-cancel", "operation-cancel"])
def test_hostile_idempotency_keys_are_refused(api, endpoint):
    url = _url(endpoint)
    for key in ("k" * 200, "a\tb"):
        response = post_raw(api, url, json.dumps({"reason": "ok"}), HTTP_IDEMPOTENCY_KEY=key)
        assert_json_4xx(response, 400)


def test_the_webhook_refuses_nested_hostile_fields_with_their_path(api):
    body = json.dumps(
        {**a2a(), "metadata": {"x": "\x00"}},
    ).encode()
    response = post_raw(api, WEBHOOK, body, **signed(body))
    body_json = assert_json_4xx(response, 400)
    assert "metadata.x" in body_json["errors"]
    long_event = json.dumps(
        {
            "type": "task_status",
            "task_id": "t1",
            "status": "running",
            "timestamp": iso(BASE),
            "note": "n" * (TEXT_MAX + 1),
        }
    ).encode()
    response = post_raw(api, WEBHOOK, long_event, **signed(long_event))
    assert "note" in assert_json_4xx(response, 400)["errors"]
    assert not Task.objects.exists()


# --- HTML form posts: cancel pages -----------------------------------------------------


def _html_cancel(kind: str) -> str:
    if kind == "task":
        return f"/tasks/{make_task('running').task_id}/cancel/?protocol=openapi"
    return f"/operations/{make_operation('running').operation_id}/cancel/"


@pytest.mark.parametrize("kind", ["task", "operation"])
@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        ("reason=before%00after", "application/x-www-form-urlencoded"),
        ("reason=" + "r" * 100_000, "application/x-www-form-urlencoded"),
        ("idempotency_key=%00&reason=x", "application/x-www-form-urlencoded"),
        ("--xyz\r\nbroken", "multipart/form-data; boundary=xyz"),
        ("reason=x", "multipart/form-data"),
        (deep(100_000), "application/json"),
        ("reason=%ff%fe", "application/x-www-form-urlencoded"),
    ],
    ids=["NUL", "huge", "NUL-key", "bad-multipart", "no-boundary", "deep-json", "bad-utf8"],
)
@pytest.mark.parametrize("htmx", [False, True])
def test_hostile_cancel_form_posts_never_fail(browser, kind, body, content_type, htmx):
    url = _html_cancel(kind)
    extra = {"HTTP_HX_REQUEST": "true"} if htmx else {}
    response = post_raw(browser, url, body, content_type, **extra)
    assert response.status_code < 500, response.content[:300]
    if body != "reason=%ff%fe":  # undecodable bytes read as U+FFFD: a reason like any other
        assert Task.objects.filter(status="cancelled").count() == 0
        assert RuntimeOperation.objects.filter(status="cancelled").count() == 0


@pytest.mark.parametrize("kind", ["task", "operation"])
def test_a_NUL_in_a_form_field_or_the_query_is_a_400(browser, kind):
    url = _html_cancel(kind)
    for body in ("reason=x&protocol=%00", "reason=x&pick=a%00b", "reason=x&na%00me=1"):
        response = post_raw(browser, url, body, "application/x-www-form-urlencoded")
        assert response.status_code == 400, (body, response.status_code)
    assert (
        post_raw(
            browser,
            url + ("&" if "?" in url else "?") + "protocol=%00",
            "reason=x",
            "application/x-www-form-urlencoded",
        ).status_code
        == 400
    )
    assert Task.objects.filter(status="cancelled").count() == 0
    assert RuntimeOperation.objects.filter(status="cancelled").count() == 0


@pytest.mark.parametrize(
    "url",
    [
        "/tasks/a%00b/",
        "/operations/a%00b/",
        "/tasks/a%00b/cancel/",
        "/api/v1/tasks/a%00b/",
        "/api/v1/operations/a%00b/",
        "/api/v1/tasks/a%00b/cancel",
        "/api/v1/messages/a%00b/",
    ],
)
def test_a_NUL_in_a_path_id_is_a_400(browser, api, url):
    client = api if url.startswith("/api/") else browser
    response = client.get(url) if not url.endswith("cancel") else client.post(url, {"reason": "x"})
    assert response.status_code == 400, (url, response.status_code)
    if url.startswith("/api/"):
        assert_json_4xx(response, 400)


def test_an_oversize_form_post_is_a_400_page(browser, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    response = post_raw(
        browser, _html_cancel("task"), "reason=" + "r" * 5000, "application/x-www-form-urlencoded"
    )
    assert response.status_code == 400
    assert "BeeOS Operator Console" in response.content.decode()


# --- cursors and query parameters on every list ----------------------------------------


def b64(raw: Any) -> str:
    data = raw if isinstance(raw, bytes) else json.dumps(raw).encode()
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


NOW = "2026-11-30T08:00:00+00:00"
BAD_CURSORS = [
    pytest.param("not-a-cursor", id="garbled"),
    pytest.param("!!!***", id="not-base64"),
    pytest.param("A", id="one-char"),
    pytest.param(b64(b"\xff\xfe\xfd\x00garbage"), id="base64-garbage"),
    pytest.param(b64([]), id="empty-list"),
    pytest.param(b64({"k": 1}), id="object"),
    pytest.param(b64(["d", "abc", 1]), id="decimal-not-a-number"),
    pytest.param(b64(["d", "1e999999999", 1]), id="decimal-huge-exponent"),
    pytest.param(b64(["d", "NaN", 1]), id="decimal-NaN"),
    pytest.param(b64(["s", "abc", 1]), id="string-for-a-timestamp"),
    pytest.param(b64(["s", "a\u0000b", 1]), id="string-NUL"),
    pytest.param(b64(["t", "not a time", 1]), id="time-garbled"),
    pytest.param(b64(["t", "2026-11-30T08:00:00", 1]), id="time-naive"),
    pytest.param(b64(["t", NOW, 10**30]), id="pk-beyond-bigint"),
    pytest.param(b64(["t", NOW, True]), id="pk-boolean"),
    pytest.param(b64(["t", NOW, 1.5]), id="pk-float"),
    pytest.param(b64(["t", NOW, 1, "extra"]), id="four-items"),
    pytest.param(b64(["x", NOW, 1]), id="unknown-kind"),
    pytest.param(b64(deep(50_000).encode()), id="deep-json"),
    pytest.param("A" * 20_000, id="very-long"),
]
HTML_LISTS = ["/tasks/", "/messages/", "/operations/", "/audit/log/"]
API_LISTS = [
    "/api/v1/tasks/",
    "/api/v1/messages/",
    "/api/v1/operations/",
    "/api/v1/operation-events/",
    "/api/v1/audit-entries/",
]


@pytest.fixture
def some_rows():
    task = make_task("running")
    make_a2a_task()
    op = make_operation("running")
    return task, op


@pytest.mark.parametrize("param", ["after", "before"])
@pytest.mark.parametrize("cursor", BAD_CURSORS)
def test_forged_or_garbled_cursors_are_400_on_every_list(browser, api, some_rows, param, cursor):
    for url in HTML_LISTS:
        response = browser.get(url, {param: cursor})
        assert response.status_code == 400, (url, response.status_code)
        assert "not valid" in response.content.decode()
    for url in API_LISTS:
        body = assert_json_4xx(api.get(url, {param: cursor}), 400)
        assert "cursor" in body, (url, body)


def test_a_real_cursor_still_pages(browser, api):
    for i in range(3):
        make_task("running", minutes_ago=i)
    first = api.get("/api/v1/tasks/", {"page_size": 1}).json()
    second = api.get(first["next"])
    assert second.status_code == 200
    assert second.json()["results"][0]["task_id"] != first["results"][0]["task_id"]
    back = api.get(second.json()["previous"])
    assert back.json()["results"] == first["results"]


@pytest.mark.parametrize(
    "query",
    [
        {"page_size": "abc"},
        {"page_size": "0"},
        {"page_size": "99999999999999999999999"},
        {"sort": "nope"},
        {"sort": "\x00"},
        {"status": "\x00"},
        {"q": "\x00"},
        {"q": "x" * 10_000},
        {"created_after": "not-a-date"},
        {"created_after": "0054-05-31T07:55:06-20:47"},
        {"created_before": "99999-01-01"},
        {"protocol": ["openapi", "\x00"]},
    ],
    ids=repr,
)
def test_bad_query_parameters_on_every_list_are_4xx(browser, api, some_rows, query):
    for url in HTML_LISTS:
        response = browser.get(url, query)
        assert response.status_code < 500, (url, response.status_code)
    for url in API_LISTS:
        response = api.get(url, query)
        assert response.status_code < 500, (url, response.status_code, response.content[:200])
        if response.status_code >= 400:
            assert response["Content-Type"].startswith("application/json")


@pytest.mark.parametrize("cursor", [c.values[0] for c in BAD_CURSORS[:14]])
def test_detail_pages_refuse_a_bad_timeline_cursor(browser, some_rows, cursor):
    task, op = some_rows
    response = browser.get(f"/tasks/{task.task_id}/", {"protocol": "openapi", "before": cursor})
    assert response.status_code == 400
    assert task.task_id in response.content.decode()


@pytest.mark.parametrize(
    "query", [{"protocol": "\x00"}, {"protocol": "x" * 5000}, {"before": ""}, {"row": "\x00"}]
)
def test_detail_pages_with_hostile_query_parameters_never_fail(browser, api, some_rows, query):
    task, op = some_rows
    for url in (
        f"/tasks/{task.task_id}/",
        f"/operations/{op.operation_id}/",
        f"/api/v1/tasks/{task.task_id}/",
        f"/api/v1/operations/{op.operation_id}/",
    ):
        client = api if url.startswith("/api/") else browser
        response = client.get(url, query)
        assert response.status_code < 500, (url, query, response.status_code)


# --- errors are the console's own: JSON under /api/, its templates elsewhere ------------


def test_unknown_api_urls_are_a_json_404(api):
    assert_json_4xx(api.get("/api/v1/no-such-thing/"), 404)


def test_a_disallowed_host_is_a_json_400_under_api_and_a_page_elsewhere(api, browser):
    assert_json_4xx(api.get("/api/v1/tasks/", HTTP_HOST="evil.example"), 400)
    page = browser.get("/tasks/", HTTP_HOST="evil.example")
    assert page.status_code == 400
    assert "Bad request" in page.content.decode()


def test_a_suspicious_multipart_upload_is_json_under_api(api, settings):
    settings.DATA_UPLOAD_MAX_NUMBER_FILES = 1
    body = (
        '--b\r\nContent-Disposition: form-data; name="a"; filename="a"\r\n\r\nx\r\n'
        '--b\r\nContent-Disposition: form-data; name="b"; filename="b"\r\n\r\ny\r\n--b--\r\n'
    )
    response = post_raw(api, _task_cancel_url(), body, "multipart/form-data; boundary=b")
    assert_json_4xx(response)


def test_html_404_is_the_console_page(browser, settings):
    settings.DEBUG = False  # production: no debug pages
    response = browser.get("/no-such-page/")
    assert response.status_code == 404
    html = response.content.decode()
    assert "Not found" in html and "BeeOS Operator Console" in html
    missing = browser.get("/tasks/no_such_task/")
    assert missing.status_code == 404 and "Not found" in missing.content.decode()


def test_a_crash_is_the_console_500_page_or_json(browser, api, monkeypatch, settings):
    settings.DEBUG = False  # production: no debug pages
    from tasks import views as task_views
    from tasks.api import views as task_api

    def boom(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(task_views.TaskListView, "get", boom)
    monkeypatch.setattr(task_api.TaskViewSet, "list", boom)
    page = browser.get("/tasks/")
    assert page.status_code == 500
    assert "Something went wrong" in page.content.decode()
    assert "Traceback" not in page.content.decode() and "boom" not in page.content.decode()
    answer = api.get("/api/v1/tasks/")
    assert answer.status_code == 500
    assert answer.json() == {"detail": "Server error."}


# --- exports: formula cells are neutralised --------------------------------------------


FORMULAS = ['=HYPERLINK("http://evil")', "+1+1", "-2+3", "@SUM(A1)", "\tTAB", "\rCR"]


def test_safe_cell():
    assert [safe_cell(v) for v in FORMULAS] == ["'" + v for v in FORMULAS]
    assert [safe_cell(v) for v in ("plain", "", "a=b", 42, None)] == ["plain", "", "a=b", 42, ""]


def test_the_audit_log_export_neutralises_formula_cells(browser):
    for i, formula in enumerate(FORMULAS):
        record(
            actor=Actor.feeder(formula),
            action="task.cancel",
            object_kind="task",
            object_id=f"{formula}{i}",
            reason=formula,
        )
    response = browser.get("/audit/log/export.csv")
    assert response.status_code == 200
    text = b"".join(response.streaming_content).decode()
    rows = list(csv.reader(io.StringIO(text)))[1:]
    assert rows
    for row in rows:
        for cell in row:
            assert not cell or cell[0] not in "=+-@\t\r", row


def test_stored_formula_values_are_neutralised_in_the_projection_audit_csv(api):
    data = openapi_task("=cmd|' /C calc'!A0", task_id="=1+1")
    response = post_raw(
        api, INGEST, json.dumps({"records": [{"kind": "openapi_task", "data": data}]})
    )
    assert response.json()["results"][0]["result"] == "created"
    out = io.StringIO()
    # The unmapped value fails the audit (exit 1), as it should.
    with contextlib.suppress(SystemExit):
        call_command(
            "audit_projections", "--format", "csv", "--no-save", stdout=out, stderr=io.StringIO()
        )
    rows = list(csv.reader(io.StringIO(out.getvalue())))
    cells = [cell for row in rows for cell in row]
    assert "'=1+1" in cells and "'=cmd|' /C calc'!A0" in cells
    assert not [c for c in cells if c and c[0] in "=+-@\t\r"]


# --- the edge helpers themselves ----------------------------------------------------


@pytest.mark.parametrize(
    "body", [deep(100_000), deep(65), "NaN", "[1e99999, Infinity]", "1" * 5000, b"\xff"]
)
def test_loads_refuses_what_the_parser_or_postgresql_cannot_take(body):
    with pytest.raises(BadJSON):
        loads(body)


def test_loads_accepts_depth_64():
    assert loads(deep(64)) is not None
