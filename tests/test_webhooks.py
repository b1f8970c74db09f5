"""The BeeOS webhook receiver: signatures first, stored and acknowledged, applied later.

The receiver only verifies, validates the envelope and queues the event (one
INSERT, deduplicated on the guide's key); ``manage.py apply_webhooks`` applies
the queue. Applying, ordering, failures and the killed worker: test_webhook_inbox.py
and test_webhook_worker_kill.py. Every receiver test here runs twice: through the
WSGI entry point gunicorn serves (the receiver answered before Django's handler,
test_webhook_wsgi.py) and through Django's handler (the test client).
"""

from __future__ import annotations

import hashlib
import hmac
import http.client
import json
import time
from urllib.parse import urlsplit

import pytest
from django.core.handlers.wsgi import WSGIHandler
from django.core.management import call_command

from beeos_console.auditlog.models import AuditEntry
from beeos_console.upstream.models import WebhookInboxEvent
from beeos_console.webhook_wsgi import WebhookFastPath
from tasks.models import Task

from .factories import make_task
from .wsgi_client import WSGIClient

URL = "/api/v1/webhooks/beeos/"
SECRET = "whsec_" + "k" * 40


@pytest.fixture(autouse=True)
def webhook_secret(settings):
    settings.BEEOS_WEBHOOK_SECRET = SECRET


@pytest.fixture(params=["wsgi entry point", "django handler"])
def client(request, client):
    """The receiver as gunicorn serves it (``beeos_console.wsgi``), then as Django's own
    handler serves it: the same answers, the same rows."""
    if request.param == "django handler":
        return client
    return WSGIClient(WebhookFastPath(WSGIHandler()))


def sign(body: bytes, *, secret: str = SECRET, at: int | None = None) -> tuple[str, str]:
    ts = str(int(time.time()) if at is None else at)
    mac = hmac.new(secret.encode(), ts.encode() + b"." + body, hashlib.sha256).hexdigest()
    return ts, mac


def event(task_id: str = "tsk_hook_1", status: str = "completed", **extra) -> bytes:
    payload = {
        "type": "task_status",
        "task_id": task_id,
        "context_id": task_id,
        "status": status,
        "final": status in ("completed", "failed", "canceled", "timeout", "rejected"),
        "timestamp": "2026-11-30T08:10:00.456Z",
    }
    payload.update(extra)
    return json.dumps(payload).encode()


def push(client, body: bytes, **headers):
    return client.generic("POST", URL, body, content_type="application/json", **headers)


def task_push_headers(body: bytes, **kw) -> dict[str, str]:
    ts, mac = sign(body, **kw)
    return {"HTTP_X_BEEOS_SIGNATURE": f"t={ts},v1={mac}"}


def apply_queued() -> None:
    call_command("apply_webhooks", verbosity=0)


@pytest.mark.django_db
class TestSignatures:
    def test_valid_task_push_is_queued_then_applied_and_flags_a_reread(self, client):
        task = make_task("running", task_id="tsk_hook_1")
        body = event()
        response = push(client, body, **task_push_headers(body))
        assert response.status_code == 200, response.content
        stored = WebhookInboxEvent.objects.get()
        assert response.json() == {"result": "queued", "event": stored.pk}
        assert (stored.scheme, stored.status, stored.kind) == ("task_push", "queued", "task_status")
        # Acknowledged, not applied: the mirror has not moved yet.
        task.refresh_from_db()
        assert task.raw_state == "running" and task.resync_requested_at is None

        apply_queued()

        task.refresh_from_db()
        assert (task.raw_state, task.status) == ("completed", "completed")
        assert task.resync_requested_at is not None
        stored.refresh_from_db()
        assert (stored.status, stored.result, stored.attempts) == ("applied", "updated", 1)
        (entry,) = AuditEntry.objects.filter(object_id="tsk_hook_1")
        assert (entry.actor, entry.actor_kind, entry.action) == (
            "beeos-webhook",
            "feeder",
            "task.state_changed",
        )
        assert entry.detail["webhook_event"] == stored.pk

    def test_valid_developer_webhook(self, client):
        body = event(task_id="tsk_new_from_hook", status="running")
        ts, mac = sign(body)
        response = push(
            client, body, HTTP_X_BEEOS_WEBHOOK_TIMESTAMP=ts, HTTP_X_BEEOS_WEBHOOK_SIGNATURE=mac
        )
        assert response.status_code == 200
        assert WebhookInboxEvent.objects.get().scheme == "developer"
        apply_queued()
        task = Task.objects.get(task_id="tsk_new_from_hook")
        assert (task.raw_state, task.agent_id) == ("running", "")
        assert task.resync_requested_at is not None

    @pytest.mark.parametrize(
        ("case", "reason"),
        [
            ("wrong_secret", "signature_mismatch"),
            ("stale", "timestamp_out_of_tolerance"),
            ("missing", "missing_header"),
            ("altered", "signature_mismatch"),
            ("garbage", "invalid_header"),
        ],
    )
    def test_refused_with_401_and_nothing_stored(self, client, case, reason):
        make_task("running", task_id="tsk_hook_1")
        body = event()
        headers = {
            "wrong_secret": task_push_headers(body, secret="another-secret-" + "z" * 30),
            "stale": task_push_headers(body, at=int(time.time()) - 3600),
            "missing": {},
            "altered": task_push_headers(body),
            "garbage": {"HTTP_X_BEEOS_SIGNATURE": "sha256=deadbeef"},
        }[case]
        if case == "altered":
            body = body.replace(b"completed", b"canceled")
        response = push(client, body, **headers)
        assert response.status_code == 401
        assert response.json()["reason"] == reason
        assert WebhookInboxEvent.objects.count() == 0
        apply_queued()
        assert Task.objects.get().raw_state == "running"

    def test_only_post_is_accepted(self, client):
        response = client.get(URL)
        assert response.status_code == 405
        assert response["Content-Type"].startswith("application/json")
        assert WebhookInboxEvent.objects.count() == 0

    def test_the_acknowledgement_carries_a_request_id(self, client):
        body = event()
        response = push(client, body, **task_push_headers(body), HTTP_X_REQUEST_ID="bee-42")
        assert response.status_code == 200 and response["X-Request-ID"] == "bee-42"
        assert int(response["Content-Length"]) == len(response.content)

    def test_unconfigured_secret_refuses_everything(self, client, settings):
        settings.BEEOS_WEBHOOK_SECRET = ""
        body = event()
        assert push(client, body, **task_push_headers(body)).status_code == 503
        assert WebhookInboxEvent.objects.count() == 0


@pytest.mark.django_db
class TestReceiverChecklist:
    def test_duplicates_are_acknowledged_and_stored_once(self, client):
        make_task("running", task_id="tsk_hook_1")
        body = event()
        first = push(client, body, **task_push_headers(body))
        again = push(client, body, **task_push_headers(body))
        # The same (task_id, status, timestamp) in another spelling of the same instant.
        respelled = event(timestamp="2026-11-30T08:10:00.456+00:00", final=True, extra="x")
        third = push(client, respelled, **task_push_headers(respelled))
        assert first.json()["result"] == "queued"
        assert again.status_code == third.status_code == 200
        assert again.json() == third.json() == {"result": "duplicate"}
        assert WebhookInboxEvent.objects.count() == 1
        apply_queued()
        assert AuditEntry.objects.filter(object_id="tsk_hook_1").count() == 1
        # Delivered again after it was applied: still a duplicate, nothing changes.
        late = push(client, body, **task_push_headers(body))
        assert late.json() == {"result": "duplicate"}
        assert WebhookInboxEvent.objects.get().status == "applied"

    def test_unknown_event_types_are_acknowledged_and_ignored(self, client):
        body = json.dumps({"type": "task_artifact_added", "task_id": "t"}).encode()
        response = push(client, body, **task_push_headers(body))
        assert response.status_code == 200
        assert response.json()["result"] == "ignored"
        assert WebhookInboxEvent.objects.count() == 0 and Task.objects.count() == 0

    def test_a_late_intermediate_event_never_regresses_a_terminal_task(self, client):
        make_task("completed", task_id="tsk_hook_1")
        body = event(status="running", timestamp="2026-11-30T09:00:00Z")
        assert push(client, body, **task_push_headers(body)).json()["result"] == "queued"
        apply_queued()
        assert Task.objects.get().raw_state == "completed"
        assert WebhookInboxEvent.objects.get().result == "stale"

    def test_a2a_task_push(self, client):
        payload = {
            "id": "a2a_pushed",
            "contextId": "ctx_1",
            "status": {"state": "TASK_STATE_WORKING", "timestamp": "2026-11-30T08:00:00Z"},
            "target_agent_id": "agt_1",
        }
        body = json.dumps(payload).encode()
        response = push(client, body, **task_push_headers(body))
        assert response.status_code == 200
        stored = WebhookInboxEvent.objects.get()
        assert (stored.kind, stored.protocol, stored.task_id) == ("a2a_push", "a2a", "a2a_pushed")
        assert stored.payload == payload  # the raw event, as received
        assert not Task.objects.exists()
        apply_queued()
        task = Task.objects.get(protocol="a2a")
        assert task.raw_state == "TASK_STATE_WORKING" and task.resync_requested_at is not None

    @pytest.mark.parametrize(
        ("body", "field"),
        [
            (event(timestamp="yesterday"), "timestamp"),
            (event(status=None), "status"),
            (event(task_id="a/../b"), "task_id"),
            (event(context_id=7), "context_id"),
            (json.dumps({"id": "a2a_x", "status": {"timestamp": "2026-11-30T08:00:00Z"}}), None),
        ],
    )
    def test_invalid_events_are_a_400_and_nothing_is_stored(self, client, body, field):
        raw = body.encode() if isinstance(body, str) else body
        response = push(client, raw, **task_push_headers(raw))
        assert response.status_code == 400
        if field:
            assert field in response.json()["errors"]
        assert WebhookInboxEvent.objects.count() == 0

    def test_a_body_in_utf16_is_stored_as_its_json(self, client):
        body = event().decode().encode("utf-16")
        response = push(client, body, **task_push_headers(body))
        assert response.json()["result"] == "queued"
        assert WebhookInboxEvent.objects.get().payload["status"] == "completed"


@pytest.mark.django_db(transaction=True)
def test_signature_header_sent_twice_over_real_http(live_server):
    """Two X-BeeOS-Signature headers on the wire: refused, nothing stored."""
    body = event()
    ts, mac = sign(body)
    target = urlsplit(live_server.url)
    conn = http.client.HTTPConnection(target.hostname, target.port, timeout=10)
    conn.putrequest("POST", URL)
    conn.putheader("Content-Type", "application/json")
    conn.putheader("Content-Length", str(len(body)))
    conn.putheader("X-BeeOS-Signature", f"t={ts},v1={mac}")
    conn.putheader("X-BeeOS-Signature", f"t={ts},v1={'0' * 64}")
    conn.endheaders(body)
    response = conn.getresponse()
    assert response.status == 401
    assert WebhookInboxEvent.objects.count() == 0
