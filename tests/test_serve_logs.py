"""The request log: a request id in and out, one line per request, JSON lines."""

from __future__ import annotations

import json
import logging
import re
import sys

import pytest

from beeos_console.core.requestlog import JsonFormatter

GENERATED = re.compile(r"[0-9a-f]{32}")


@pytest.fixture
def request_lines(caplog) -> pytest.LogCaptureFixture:
    caplog.set_level(logging.INFO, logger="beeos_console.request")
    return caplog


def only_line(caplog: pytest.LogCaptureFixture) -> logging.LogRecord:
    lines = [r for r in caplog.records if r.name == "beeos_console.request"]
    assert len(lines) == 1, [r.getMessage() for r in lines]
    return lines[0]


@pytest.mark.parametrize(
    "sent",
    ["4bf92f3577b34da6a3ce929d0e0e4736", "lb-1234:5", "00-4bf9.2f35_77b3", "x" * 128],
)
def test_a_well_formed_request_id_is_kept_and_echoed(client, request_lines, sent):
    response = client.get("/healthz", HTTP_X_REQUEST_ID=sent)
    assert response["X-Request-ID"] == sent
    assert only_line(request_lines).request_id == sent


@pytest.mark.parametrize(
    "sent",
    ["", "x" * 129, "a b", 'x", "user": "mallory', "id\nINFO forged line", "<script>", "ü"],
)
def test_any_other_request_id_is_replaced_by_a_new_one(client, request_lines, sent):
    response = client.get("/healthz", HTTP_X_REQUEST_ID=sent)
    assert GENERATED.fullmatch(response["X-Request-ID"])
    assert only_line(request_lines).request_id == response["X-Request-ID"]


def test_each_request_without_an_id_gets_its_own(client):
    first, second = client.get("/healthz"), client.get("/healthz")
    assert GENERATED.fullmatch(first["X-Request-ID"])
    assert first["X-Request-ID"] != second["X-Request-ID"]


def test_the_line_names_the_user_the_view_and_the_outcome(client, support_user, request_lines):
    client.force_login(support_user)
    client.get("/tasks/", {"status": "failed"}, HTTP_X_REQUEST_ID="req-1")
    line = only_line(request_lines)
    assert line.getMessage().startswith("GET /tasks/ 200 ")
    assert (line.user, line.view, line.method, line.path, line.status) == (
        "sam-support",
        "tasks:list",
        "GET",
        "/tasks/",
        200,
    )
    assert line.duration_ms >= 0


def test_anonymous_requests_and_unknown_paths_log_nulls(client, request_lines):
    assert client.get("/no-such-page/").status_code in (302, 404)
    line = only_line(request_lines)
    assert line.user is None and line.view is None


def test_a_streamed_export_is_logged_once_it_is_sent(client, support_user, request_lines):
    client.force_login(support_user)
    response = client.get("/tasks/export.csv")
    assert response.streaming
    assert not [r for r in request_lines.records if r.name == "beeos_console.request"]  # not yet
    b"".join(response.streaming_content)
    response.close()  # as the server does after the last byte
    assert only_line(request_lines).status == 200


def test_json_lines_carry_the_fields_and_stay_one_line(client, request_lines):
    client.get("/healthz", HTTP_X_REQUEST_ID="req-2")
    entry = json.loads(JsonFormatter().format(only_line(request_lines)))
    assert entry["request_id"] == "req-2"
    assert entry["logger"] == "beeos_console.request" and entry["level"] == "INFO"
    assert entry["status"] == 200 and entry["view"] == "healthz" and entry["user"] is None
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", entry["timestamp"])

    try:
        raise ValueError("bad\nthing")
    except ValueError:
        record = logging.getLogger("x").makeRecord(
            "x", logging.ERROR, __file__, 1, "two\nlines", (), exc_info=sys.exc_info()
        )
    record.__dict__["when"] = object()  # an extra that is no JSON
    line = JsonFormatter().format(record)
    assert "\n" not in line
    entry = json.loads(line)
    assert entry["message"] == "two\nlines" and entry["request_id"] is None
    assert "ValueError: bad" in entry["exception"]
    assert entry["when"].startswith("<object object")
