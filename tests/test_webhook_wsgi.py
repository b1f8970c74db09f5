"""The webhook receiver answered before Django's handler (``beeos_console.webhook_wsgi``).

Requests go through the WSGI application gunicorn serves (``WSGIClient``: the
environ a server hands over, the body read, the answer closed). The receiver's
own answers (signatures, validation, duplicates) are test_webhooks.py's, run
through both entry points; here: what every request gets besides the view —
the request id and log line, the metrics, the host check, the HTTPS redirect,
the body limit's 413, JSON errors — and that anything else still reaches Django.
Through real gunicorn: test_serve.py.
"""

from __future__ import annotations

import logging

import pytest
from django.core.handlers.wsgi import WSGIHandler
from django.db import connection, connections
from prometheus_client import REGISTRY

from beeos_console import webhook_wsgi, wsgi
from beeos_console.upstream.models import WebhookInboxEvent
from beeos_console.webhook_wsgi import WebhookFastPath

from .test_webhooks import SECRET, URL, event, task_push_headers
from .wsgi_client import WSGIClient

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def webhook_secret(settings):
    settings.BEEOS_WEBHOOK_SECRET = SECRET
    settings.WEBHOOK_NUDGE_SECONDS = 0


def served() -> WSGIClient:
    """The entry point as ``beeos_console.wsgi`` builds it, with the settings of the test."""
    return WSGIClient(WebhookFastPath(WSGIHandler()))


def push(client: WSGIClient, body: bytes, **extra):
    return client.generic(
        "POST", URL, body, content_type="application/json", **task_push_headers(body), **extra
    )


def request_lines(caplog) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "beeos_console.request"]


def test_the_entry_point_is_the_fast_path():
    assert isinstance(wsgi.application, WebhookFastPath)


def test_the_receiver_goes_through_the_outer_middleware_and_no_further(settings):
    outer = webhook_wsgi.outer_middleware()
    assert outer == settings.MIDDLEWARE[: len(outer)]
    assert outer[-1] == "django.middleware.security.SecurityMiddleware"
    assert "beeos_console.core.requestlog.RequestLogMiddleware" in outer
    assert "beeos_console.metrics.middleware.RequestMetricsMiddleware" in outer
    assert "beeos_console.core.middleware.ApiErrorsMiddleware" in outer
    client = served()
    body = event()
    answer = push(client, body)
    assert answer.status_code == 200 and answer.json()["result"] == "queued"
    # Security headers (SecurityMiddleware) yes; the page middleware's (frame options) no.
    assert answer["X-Content-Type-Options"] == "nosniff"
    assert not answer.has_header("X-Frame-Options")
    assert int(answer["Content-Length"]) == len(answer.content)
    # Anything else is Django's: the page middleware runs for it.
    health = client.get("/healthz")
    assert health.status_code == 200 and health["X-Frame-Options"] == "DENY"
    other = client.generic("POST", "/api/v1/ingest/", b"{}", content_type="application/json")
    assert other.status_code in (401, 403) and other.has_header("X-Frame-Options")


def test_request_id_and_one_log_line(caplog):
    caplog.set_level(logging.INFO, logger="beeos_console.request")
    body = event()
    answer = push(served(), body, HTTP_X_REQUEST_ID="bee-7")
    assert answer["X-Request-ID"] == "bee-7"
    (line,) = request_lines(caplog)
    assert (line.request_id, line.view, line.method, line.path, line.status, line.user) == (
        "bee-7",
        "api-webhook-beeos",
        "POST",
        URL,
        200,
        None,
    )
    forged = push(served(), event(task_id="tsk_2"), HTTP_X_REQUEST_ID='x" "user": "m')
    assert forged["X-Request-ID"] != 'x" "user": "m' and len(forged["X-Request-ID"]) == 32


def test_request_metrics_and_results_are_counted():
    def value(name: str, **labels: str) -> float:
        return REGISTRY.get_sample_value(name, labels) or 0.0

    observed = ("beeos_console_http_request_duration_seconds_count",)
    labels = {"view": "api-webhook-beeos", "method": "POST", "status": "2xx"}
    before = (
        value(*observed, **labels),
        value("beeos_console_webhook_events_total", result="queued"),
    )
    refused_before = value("beeos_console_webhook_events_total", result="http_401")
    client = served()
    body = event()
    assert push(client, body).status_code == 200
    assert client.generic("POST", URL, body, content_type="application/json").status_code == 401
    after = (
        value(*observed, **labels),
        value("beeos_console_webhook_events_total", result="queued"),
    )
    assert after == (before[0] + 1, before[1] + 1)
    assert value("beeos_console_webhook_events_total", result="http_401") == refused_before + 1


def test_a_host_not_allowed_is_a_json_400_and_nothing_is_stored(caplog):
    caplog.set_level(logging.INFO, logger="beeos_console.request")
    answer = push(served(), event(), HTTP_HOST="evil.example")
    assert answer.status_code == 400
    assert answer["Content-Type"] == "application/json"
    assert answer.json() == {"detail": "Bad request."}
    assert WebhookInboxEvent.objects.count() == 0
    assert request_lines(caplog)[-1].status == 400


def test_a_body_over_the_limit_is_a_json_413_and_nothing_is_stored(settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    body = event(padding="x" * 2000)
    answer = push(served(), body)
    assert answer.status_code == 413
    assert "at most 1000 bytes" in answer.json()["detail"]
    assert int(answer["Content-Length"]) == len(answer.content)
    assert WebhookInboxEvent.objects.count() == 0


def test_production_settings_redirect_plain_http_to_https(settings):
    settings.SECURE_SSL_REDIRECT = True
    settings.SECURE_HSTS_SECONDS = 3600
    client = served()
    plain = push(client, event())
    assert plain.status_code == 301
    assert plain["Location"] == f"https://testserver{URL}"
    assert WebhookInboxEvent.objects.count() == 0
    secure = push(client, event(), secure=True)
    assert secure.status_code == 200 and secure.json()["result"] == "queued"
    assert secure["Strict-Transport-Security"].startswith("max-age=3600")


def test_client_input_is_never_a_5xx():
    client = served()
    bodies = [b"", b"{", b"[]", b"\xff\xfe\x00", b'{"type": "task_status"}', b"[" * 100_000]
    for body in bodies:
        answer = push(client, body)
        assert 400 <= answer.status_code < 500, (body[:20], answer.status_code)
        assert answer["Content-Type"] == "application/json"
    unsigned = client.generic("POST", URL, b"{}", content_type="text/plain")
    assert unsigned.status_code == 401
    assert WebhookInboxEvent.objects.count() == 0


@pytest.mark.django_db(transaction=True)
def test_a_connection_the_server_closed_between_events_is_replaced():
    """The connection the last event used was closed by the server since (idle
    timeout, restart): the next event is still stored, once."""
    client = served()
    assert push(client, event(task_id="tsk_before")).json()["result"] == "queued"
    pid = connection.connection.info.backend_pid
    other = connections.create_connection("default")
    try:
        with other.cursor() as cursor:
            cursor.execute("SELECT pg_terminate_backend(%s)", [pid])
    finally:
        other.close()
    answer = push(client, event(task_id="tsk_after"))
    assert answer.status_code == 200 and answer.json()["result"] == "queued"
    assert connection.connection.info.backend_pid != pid
    stored = WebhookInboxEvent.objects.order_by("id").values_list("task_id", flat=True)
    assert list(stored) == ["tsk_before", "tsk_after"]
