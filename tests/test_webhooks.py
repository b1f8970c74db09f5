"""The BeeOS webhook receiver: signatures first, duplicates dropped, the API is truth."""

from __future__ import annotations

import hashlib
import hmac
import http.client
import json
import time
from urllib.parse import urlsplit

import pytest

from tasks.models import Task, WebhookEvent

from .factories import make_task

URL = "/api/v1/webhooks/beeos/"
SECRET = "whsec_" + "k" * 40


@pytest.fixture(autouse=True)
def webhook_secret(settings):
    settings.BEEOS_WEBHOOK_SECRET = SECRET


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


@pytest.mark.django_db
class TestSignatures:
    def test_valid_task_push_updates_the_task_and_flags_a_reread(self, client):
        task = make_task("running", task_id="tsk_hook_1")
        body = event()
        response = push(client, body, **task_push_headers(body))
        assert response.status_code == 200, response.content
        assert response.json()["result"] == "updated"
        task.refresh_from_db()
        assert (task.raw_state, task.status) == ("completed", "completed")
        assert task.resync_requested_at is not None
        assert WebhookEvent.objects.get().scheme == "task_push"

    def test_valid_developer_webhook(self, client):
        body = event(task_id="tsk_new_from_hook", status="running")
        ts, mac = sign(body)
        response = push(
            client, body, HTTP_X_BEEOS_WEBHOOK_TIMESTAMP=ts, HTTP_X_BEEOS_WEBHOOK_SIGNATURE=mac
        )
        assert response.status_code == 200
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
        assert WebhookEvent.objects.count() == 0
        assert Task.objects.get().raw_state == "running"

    def test_unconfigured_secret_refuses_everything(self, client, settings):
        settings.BEEOS_WEBHOOK_SECRET = ""
        body = event()
        assert push(client, body, **task_push_headers(body)).status_code == 503
        assert WebhookEvent.objects.count() == 0


@pytest.mark.django_db
class TestReceiverChecklist:
    def test_duplicates_are_dropped(self, client):
        make_task("running", task_id="tsk_hook_1")
        body = event()
        first = push(client, body, **task_push_headers(body))
        again = push(client, body, **task_push_headers(body))
        assert first.json()["result"] == "updated"
        assert again.json() == {"result": "duplicate"}
        assert WebhookEvent.objects.count() == 1

    def test_unknown_event_types_are_acknowledged_and_ignored(self, client):
        body = json.dumps({"type": "task_artifact_added", "task_id": "t"}).encode()
        response = push(client, body, **task_push_headers(body))
        assert response.status_code == 200
        assert response.json()["result"] == "ignored"
        assert WebhookEvent.objects.count() == 0 and Task.objects.count() == 0

    def test_a_late_intermediate_event_never_regresses_a_terminal_task(self, client):
        make_task("completed", task_id="tsk_hook_1")
        body = event(status="running", timestamp="2026-11-30T09:00:00Z")
        response = push(client, body, **task_push_headers(body))
        assert response.json()["result"] == "stale"
        assert Task.objects.get().raw_state == "completed"

    def test_a2a_task_push(self, client):
        body = json.dumps(
            {
                "id": "a2a_pushed",
                "contextId": "ctx_1",
                "status": {"state": "TASK_STATE_WORKING", "timestamp": "2026-11-30T08:00:00Z"},
                "target_agent_id": "agt_1",
            }
        ).encode()
        response = push(client, body, **task_push_headers(body))
        assert response.status_code == 200
        assert Task.objects.get(protocol="a2a").raw_state == "TASK_STATE_WORKING"

    def test_invalid_event_fields_are_a_400(self, client):
        body = event(timestamp="yesterday")
        response = push(client, body, **task_push_headers(body))
        assert response.status_code == 400
        assert "timestamp" in response.json()["errors"]


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
    assert WebhookEvent.objects.count() == 0
