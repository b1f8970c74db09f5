"""Cancel rules through the BeeOS gateway, over real HTTP against the stand-in, on PostgreSQL.

Each test seeds the same object in the stand-in (what BeeOS holds) and in our mirror
(through the ingest services), cancels it through the engine with an explicitly built
``BeeOSGateway``, then checks both sides: what the operator sees (the outcome, the mirror
after the re-read, the CancelRequest row, the one audit entry) and what BeeOS received
(how many cancel calls, their Idempotency-Key, the re-reads).
"""

from __future__ import annotations

import datetime as dt
import threading
import uuid
from dataclasses import dataclass

import beeos_cloud_sdk
import pytest
from django.db import connection
from rest_framework.test import APIClient

from beeos_console.auditlog.models import AuditEntry
from beeos_console.auditlog.services import Actor
from beeos_console.cancels import gateways
from beeos_console.cancels.gateways import LocalGateway
from beeos_console.cancels.models import CancelRequest
from beeos_console.core import tokens
from beeos_console.upstream import clients
from beeos_console.upstream.gateway import A2A_CANCEL_ERRORS, BeeOSGateway
from operations.models import RuntimeOperation
from operations.services.cancel import cancel_operation
from operations.services.write import ingest_runtime_operation
from tasks.models import Task
from tasks.services.cancel import cancel_task
from tasks.services.write import ingest_a2a_task, ingest_openapi_task
from tests.standin import BeeOSStandIn
from tests.standin.contract import iso, wire

pytestmark = pytest.mark.django_db

KEY = "oag_console_cancel_test"
CLOUD_KEY = "bsk_console_cancel_test"
AGENT = "agt_support_triage"
INSTANCE = "ins_store118"
FEEDER = Actor.feeder("test-feeder")
OLGA = Actor("olga-operator")
OMAR = Actor("omar-operator")
T0 = dt.datetime(2026, 11, 30, 8, 0, tzinfo=dt.UTC)
TASK_CANCEL = "/api/v1/agents/*/tasks/*/cancel"
OP_CANCEL = "/api/v1/instances/*/operations/*/cancel"
A2A_CANCEL = "/v1/a2a/*/tasks/*/cancel"


# --- fixtures and helpers -------------------------------------------------------------------


@pytest.fixture(autouse=True)
def timeouts(monkeypatch):
    """Short, but longer than any answer the stand-in holds back unless a test says so."""
    monkeypatch.setattr(clients, "TIMEOUT", (1.0, 3.0))


@pytest.fixture
def standin():
    with BeeOSStandIn(api_key=KEY, cloud_api_key=CLOUD_KEY) as server:
        yield server
    assert server.errors == []  # the stand-in itself never crashed


def make_gateway(standin: BeeOSStandIn, *, cloud_timeout: float = 3.0) -> BeeOSGateway:
    return BeeOSGateway(
        client=clients.platform_client(host=standin.url, api_key=KEY),
        cloud=beeos_cloud_sdk.BeeOSClient(standin.cloud_url, CLOUD_KEY, timeout=cloud_timeout),
    )


@pytest.fixture
def gw(standin):
    gateway = make_gateway(standin)
    yield gateway
    gateway.client.rest_client.pool_manager.clear()


def task_pair(standin: BeeOSStandIn, *, upstream_status: str, mirror_status: str) -> Task:
    """The same OpenAPI task in the stand-in and in our mirror (maybe in different states)."""
    task_id = f"tsk_{uuid.uuid4().hex[:16]}"
    seeded = standin.add_task(task_id, agent_id=AGENT, status=upstream_status, created_at=T0)
    data = wire(seeded)
    data.update({"status": mirror_status, "updated_at": iso(T0)})
    data.pop("completed_at", None)
    return ingest_openapi_task(data, actor=FEEDER).obj


def a2a_pair(standin: BeeOSStandIn, *, upstream_state: str, mirror_state: str) -> Task:
    view = standin.add_a2a_task(
        task_id=f"a2a_{uuid.uuid4().hex[:16]}", agent_id=AGENT, state=upstream_state
    )
    mirrored = {**view, "status": {**view["status"], "state": mirror_state}}
    mirrored.pop("completed_at", None)
    return ingest_a2a_task(mirrored, actor=FEEDER).obj


def operation_pair(standin: BeeOSStandIn, *, status: str = "running") -> RuntimeOperation:
    seeded = standin.add_operation(instance_id=INSTANCE, status=status, created_at=T0)
    return ingest_runtime_operation(wire(seeded), actor=FEEDER).obj


def cancel(task: Task, gw, **kw):
    kw.setdefault("reason", "customer asked to stop")
    kw.setdefault("actor", OLGA)
    return cancel_task(task.protocol, task.task_id, gw=gw, **kw)


def cancel_op(op: RuntimeOperation, gw, **kw):
    kw.setdefault("reason", "wrong model")
    kw.setdefault("actor", OLGA)
    return cancel_operation(op.operation_id, gw=gw, **kw)


def audits(kind: str, object_id: str) -> list[AuditEntry]:
    return list(AuditEntry.objects.filter(action=f"{kind}.cancel", object_id=object_id))


def the_audit(outcome) -> AuditEntry:
    """The one audit entry of this attempt, checked against its CancelRequest."""
    request = outcome.request
    [entry] = audits(request.object_kind, request.object_id)
    assert entry.actor == request.requested_by
    assert entry.reason == request.reason
    assert entry.detail["idempotency_key"] == request.idempotency_key
    assert entry.detail["result"] == outcome.result
    assert entry.detail["gateway"] == "beeos"
    return entry


def paths(standin: BeeOSStandIn) -> list[tuple[str, str]]:
    return [(r.method, r.path) for r in standin.requests]


def reread_after_cancel(standin: BeeOSStandIn, cancel_pattern: str, get_path: str) -> bool:
    """A GET of the object was sent after the (one) cancel POST."""
    [post] = standin.requests_to("POST", cancel_pattern)
    after = standin.requests[standin.requests.index(post) + 1 :]
    return ("GET", get_path) in [(r.method, r.path) for r in after]


# --- 1-2. OpenAPI tasks ---------------------------------------------------------------------


def test_running_openapi_task_is_cancelled_and_the_reread_mirrors_canceled(standin, gw):
    task = task_pair(standin, upstream_status="running", mirror_status="running")

    outcome = cancel(task, gw)

    assert outcome.result == "cancelled", outcome.message
    assert outcome.message == "BeeOS accepted the cancel."
    task.refresh_from_db()
    assert (task.raw_state, task.status) == ("canceled", "cancelled")
    request = outcome.request
    assert (request.state, request.result, request.upstream_status) == (
        "accepted",
        "cancelled",
        200,
    )
    assert request.gateway == "beeos"
    entry = the_audit(outcome)
    assert entry.before["raw_state"] == "running"
    assert entry.after["raw_state"] == "canceled"
    assert entry.detail["upstream"] == {"status": 200, "outcome": "accepted"}
    # Upstream: one cancel carrying our reason, then the re-read (getTask).
    [post] = standin.requests_to("POST", TASK_CANCEL)
    assert post.path == f"/api/v1/agents/{AGENT}/tasks/{task.task_id}/cancel"
    assert post.json == {"reason": "customer asked to stop"}
    assert [e.kind for e in standin.effects_of(object_id=task.task_id)] == ["task.cancel"]
    assert reread_after_cancel(standin, TASK_CANCEL, f"/api/v1/agents/{AGENT}/tasks/{task.task_id}")


def test_openapi_task_closed_upstream_is_refused_and_the_reread_shows_its_end(standin, gw):
    task = task_pair(standin, upstream_status="completed", mirror_status="running")

    outcome = cancel(task, gw)

    assert outcome.result == "refused"
    assert "already closed" in outcome.message and "409" in outcome.message
    task.refresh_from_db()
    assert (task.raw_state, task.status) == ("completed", "completed")  # the re-read's truth
    assert (outcome.request.state, outcome.request.upstream_status) == ("refused", 409)
    entry = the_audit(outcome)
    assert entry.before["raw_state"] == "running"
    assert entry.after["raw_state"] == "completed"
    assert entry.detail["upstream"]["status"] == 409
    assert entry.detail["upstream"]["outcome"] == "already_closed"
    assert entry.detail["upstream"]["code"] == "conflict"
    assert len(standin.requests_to("POST", TASK_CANCEL)) == 1
    assert standin.effects == []
    assert reread_after_cancel(standin, TASK_CANCEL, f"/api/v1/agents/{AGENT}/tasks/{task.task_id}")


# --- 3. A2A tasks -----------------------------------------------------------------------------


def test_a2a_cancel_is_accepted(standin, gw):
    task = a2a_pair(standin, upstream_state="TASK_STATE_WORKING", mirror_state="TASK_STATE_WORKING")

    outcome = cancel(task, gw)

    assert outcome.ok, outcome.message
    assert "accepted the A2A cancel" in outcome.message
    [post] = standin.requests_to("POST", A2A_CANCEL)
    assert post.path == f"/v1/a2a/{AGENT}/tasks/{task.task_id}/cancel"
    assert post.header("Authorization") == f"Bearer {CLOUD_KEY}"
    assert [e.kind for e in standin.effects] == ["a2a.cancel"]
    # The re-read (Cloud getA2ATask) brings the upstream end into the mirror.
    assert ("GET", f"/v1/a2a/{AGENT}/tasks/{task.task_id}") in paths(standin)
    task.refresh_from_db()
    assert (task.raw_state, task.status) == ("TASK_STATE_CANCELED", "cancelled")
    assert outcome.result == "cancelled"
    assert outcome.request.state == "accepted"
    entry = the_audit(outcome)
    assert entry.detail["upstream"]["outcome"] == "accepted"
    assert entry.after["raw_state"] == "TASK_STATE_CANCELED"


def test_a2a_task_terminal_upstream_is_refused_with_32002(standin, gw):
    task = a2a_pair(
        standin, upstream_state="TASK_STATE_COMPLETED", mirror_state="TASK_STATE_WORKING"
    )

    outcome = cancel(task, gw)

    assert outcome.result == "refused", outcome.message
    assert "-32002" in outcome.message and "not cancelable" in outcome.message
    assert outcome.request.state == "refused"
    entry = the_audit(outcome)
    assert entry.detail["upstream"]["a2a_code"] == "-32002"
    assert entry.detail["upstream"]["code"] == "task_not_cancelable"
    assert len(standin.requests_to("POST", A2A_CANCEL)) == 1
    assert standin.effects == []
    # The message says it was re-read: it was, and the mirror shows the end.
    assert ("GET", f"/v1/a2a/{AGENT}/tasks/{task.task_id}") in paths(standin)
    task.refresh_from_db()
    assert (task.raw_state, task.status) == ("TASK_STATE_COMPLETED", "completed")


# --- 3b. A2A JSON-RPC errors (seed 003), seen by the operator, the API and the audit -----------


@dataclass(frozen=True)
class A2ACase:
    code: int
    reason: str  # seed 003 names only TASK_NOT_FOUND; the others are test values, shown verbatim
    http_status: int  # the Cloud REST cancel documents only "default: ErrorResponse"
    result: str
    state: str
    rest_status: int
    words: tuple[str, ...]
    reread: bool  # the answer leaves the outcome open to a re-read


A2A_CASES = [
    A2ACase(-32001, "TASK_NOT_FOUND", 404, "failed", "failed", 502, ("not found",), False),
    A2ACase(
        -32002, "TASK_NOT_CANCELABLE", 409, "refused", "refused", 409, ("not cancelable",), True
    ),
    A2ACase(-32008, "AGENT_BUSY", 503, "not_sent", "not_sent", 503, ("busy", "Retry later"), False),
    A2ACase(
        -32009,
        "VERSION_NOT_SUPPORTED",
        400,
        "failed",
        "failed",
        502,
        ("A2A-Version is incompatible", "cancel failed"),
        False,
    ),
    A2ACase(
        -32010,
        "CONNECTION_LOST_AFTER_DISPATCH",
        502,
        "uncertain",
        "uncertain",
        504,
        ("lost after the task was dispatched", "not resent"),
        True,
    ),
    A2ACase(
        -32011,
        "TASK_TIMEOUT",
        504,
        "uncertain",
        "uncertain",
        504,
        ("timed out", "not resent"),
        True,
    ),
    A2ACase(
        -32012,
        "CONNECTION_LOST_BEFORE_DISPATCH",
        503,
        "not_sent",
        "not_sent",
        503,
        ("lost before dispatch", "safe to retry"),
        False,
    ),
]


@pytest.fixture
def beeos_settings(settings, standin):
    """The console's own gateway (views, API) pointed at the stand-in."""
    settings.BEEOS_API_URL = standin.url
    settings.BEEOS_API_KEY = KEY
    settings.BEEOS_CLOUD_URL = standin.cloud_url
    settings.BEEOS_CLOUD_API_KEY = CLOUD_KEY
    return settings


def _check_a2a_attempt(standin, task: Task, case: A2ACase) -> AuditEntry:
    [request] = CancelRequest.objects.filter(object_id=task.task_id)
    assert (request.state, request.result) == (case.state, case.result)
    [entry] = audits("task", task.task_id)
    upstream_answer = entry.detail["upstream"]
    assert upstream_answer["a2a_code"] == str(case.code)
    assert upstream_answer["reason"] == case.reason
    assert upstream_answer["status"] == case.http_status
    # One cancel went out and none was resent; a re-read followed when the outcome is open.
    assert len(standin.requests_to("POST", f"/v1/a2a/*/tasks/{task.task_id}/cancel")) == 1
    reread = ("GET", f"/v1/a2a/{AGENT}/tasks/{task.task_id}") in paths(standin)
    assert reread is case.reread
    if case.result == "uncertain":
        # ...and more re-reads are scheduled, starting a minute later.
        assert request.next_check_at == request.finished_at + dt.timedelta(minutes=1)
    else:
        assert request.next_check_at is None
    if case.result != "not_sent":
        assert "safe to retry" not in entry.detail["message"].lower()
    return entry


@pytest.mark.parametrize("case", A2A_CASES, ids=lambda c: str(c.code))
def test_a2a_error_code_is_told_in_words_with_code_and_reason(
    standin, beeos_settings, client, operator_user, case
):
    """Over real HTTP through beeos-cloud-sdk: the htmx fragment, the REST answer, the audit."""
    client.force_login(operator_user)
    via_html = a2a_pair(standin, upstream_state="TASK_STATE_WORKING", mirror_state="working")
    via_api = a2a_pair(standin, upstream_state="TASK_STATE_WORKING", mirror_state="working")
    standin.a2a_error(case.code, case.reason, status=case.http_status, times=2)

    response = client.post(
        f"/tasks/{via_html.task_id}/cancel/",
        {"reason": "customer asked", "idempotency_key": f"k-{case.code}", "protocol": "a2a"},
        HTTP_HX_REQUEST="true",
    )
    html = response.content.decode()
    assert response.status_code == 200
    assert f"{case.result.replace('_', ' ').capitalize()}." in html.replace("_", " ")
    for words in case.words:
        assert words in html
    assert f"<code>{case.code}</code>" in html and f"<code>{case.reason}</code>" in html
    _check_a2a_attempt(standin, via_html, case)

    _, token = tokens.issue(operator_user)
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    answer = api.post(
        f"/api/v1/tasks/{via_api.task_id}/cancel?protocol=a2a", {"reason": "x"}, format="json"
    )
    assert answer.status_code == case.rest_status
    body = answer.json()
    assert body["result"] == case.result
    assert body["upstream_error"]["a2a_code"] == str(case.code)
    assert body["upstream_error"]["reason"] == case.reason
    assert f"A2A error {case.code}, reason {case.reason}" in body["message"]
    for words in case.words:
        assert words in body["message"]
    _check_a2a_attempt(standin, via_api, case)
    assert standin.effects == []  # the injected errors changed nothing upstream


@pytest.mark.parametrize("http_status", [200, 502])
def test_a2a_jsonrpc_error_envelope_is_an_error_even_on_http_200(standin, gw, http_status):
    """The seed's RuntimeMethodResponse shape: errors travel in the body, on HTTP 200."""
    task = a2a_pair(standin, upstream_state="TASK_STATE_WORKING", mirror_state="working")
    standin.a2a_error(-32010, "LOST", "gone after dispatch", status=http_status, jsonrpc=True)

    outcome = cancel(task, gw)

    assert outcome.result == "uncertain", outcome.message
    assert "not resent" in outcome.message and "A2A error -32010, reason LOST" in outcome.message
    assert outcome.upstream_error == {
        "a2a_code": "-32010",
        "reason": "LOST",
        "message": "gone after dispatch",
    }
    assert the_audit(outcome).detail["upstream"]["a2a_code"] == "-32010"
    assert len(standin.requests_to("POST", A2A_CANCEL)) == 1


def test_an_a2a_code_without_a_rule_is_uncertain_never_safe(standin, gw):
    task = a2a_pair(standin, upstream_state="TASK_STATE_WORKING", mirror_state="working")
    standin.a2a_error(-32603, "INTERNAL", status=500)

    outcome = cancel(task, gw)

    assert outcome.result == "uncertain", outcome.message
    assert "no rule" in outcome.message and "-32603" in outcome.message
    assert "safe to retry" not in outcome.message.lower()


def test_the_a2a_table_covers_the_design_rules():
    """DESIGN.md, Cancel rules: one row per code, in one table."""
    assert {code: rule.outcome for code, rule in A2A_CANCEL_ERRORS.items()} == {
        -32001: gateways.NOT_FOUND,
        -32002: gateways.NOT_CANCELLABLE,
        -32008: gateways.NOT_SENT,
        -32009: gateways.FAILED,
        -32010: gateways.UNCERTAIN,
        -32011: gateways.UNCERTAIN,
        -32012: gateways.NOT_SENT,
    }


# --- 4. runtime operations --------------------------------------------------------------------


def test_running_operation_gets_a_cancel_request_with_our_idempotency_key(standin, gw):
    standin.cancel_settle_seconds = None  # the runtime has not stopped yet
    op = operation_pair(standin)

    outcome = cancel_op(op, gw, idempotency_key="console-op-1")

    assert outcome.result == "cancel_requested", outcome.message
    assert "202" in outcome.message
    [post] = standin.requests_to("POST", OP_CANCEL)
    assert post.path == f"/api/v1/instances/{INSTANCE}/operations/{op.operation_id}/cancel"
    assert post.header("Idempotency-Key") == outcome.request.idempotency_key == "console-op-1"
    assert [(e.kind, e.detail) for e in standin.effects] == [
        ("operation.cancel_requested", {"idempotency_key": "console-op-1"})
    ]
    op.refresh_from_db()  # re-read: the cancel request is on the operation, still running
    assert (op.raw_status, op.status) == ("running", "processing")
    assert op.has_cancel_request
    request = outcome.request
    assert (request.state, request.upstream_status) == ("accepted", 202)
    assert request.upstream == {"outcome": "accepted", "body": {"status": "cancel_requested"}}
    entry = the_audit(outcome)
    assert entry.detail["upstream"] == {
        "status": 202,  # the HTTP status, not overwritten by the body's "status"
        "outcome": "accepted",
        "body": {"status": "cancel_requested"},
    }

    # The runtime stops; a second cancel is refused without a call (the request exists).
    standin.settle_cancel(op.operation_id)
    again = cancel_op(op, gw, actor=OMAR)
    assert again.result == "already_requested"
    assert len(standin.requests_to("POST", OP_CANCEL)) == 1


def test_running_operation_cancel_settles_and_the_reread_shows_cancelled(standin, gw):
    op = operation_pair(standin)  # the stand-in settles an accepted cancel at once

    outcome = cancel_op(op, gw)

    assert outcome.result == "cancelled", outcome.message
    op.refresh_from_db()
    assert (op.raw_status, op.effect_state, op.status) == ("cancelled", "cancelled", "cancelled")
    [post] = standin.requests_to("POST", OP_CANCEL)
    assert post.header("Idempotency-Key") == outcome.request.idempotency_key
    assert outcome.request.idempotency_key.startswith("console-")
    assert the_audit(outcome).after["raw_status"] == "cancelled"
    get_path = f"/api/v1/instances/{INSTANCE}/operations/{op.operation_id}"
    assert reread_after_cancel(standin, OP_CANCEL, get_path)


def test_operation_committed_upstream_is_refused_with_409(standin, gw):
    op = operation_pair(standin)
    standin.set_operation_status(op.operation_id, "runtime_committed")  # we have not seen it

    outcome = cancel_op(op, gw)

    assert outcome.result == "refused", outcome.message
    assert "OPERATION_NOT_CANCELLABLE" in outcome.message
    assert (outcome.request.state, outcome.request.upstream_status) == ("refused", 409)
    entry = the_audit(outcome)
    assert entry.detail["upstream"]["code"] == "OPERATION_NOT_CANCELLABLE"
    assert entry.detail["upstream"]["outcome"] == "not_cancellable"
    [post] = standin.requests_to("POST", OP_CANCEL)
    assert post.header("Idempotency-Key") == outcome.request.idempotency_key
    assert standin.effects == []
    # "It was re-read": the mirror shows the commit.
    get_path = f"/api/v1/instances/{INSTANCE}/operations/{op.operation_id}"
    assert reread_after_cancel(standin, OP_CANCEL, get_path)
    op.refresh_from_db()
    assert (op.raw_status, op.effect_state) == ("runtime_committed", "committed")
    assert entry.after["raw_status"] == "runtime_committed"


# --- 5. 404 and 429 ---------------------------------------------------------------------------


def test_unknown_to_beeos_fails_with_404(standin, gw):
    task = task_pair(standin, upstream_status="running", mirror_status="running")
    standin.fail(TASK_CANCEL, 404, method="POST")

    outcome = cancel(task, gw)

    assert outcome.result == "failed"
    assert "does not know" in outcome.message and "404" in outcome.message
    assert (outcome.request.state, outcome.request.upstream_status) == ("failed", 404)
    entry = the_audit(outcome)
    assert entry.detail["upstream"]["status"] == 404
    assert entry.detail["upstream"]["outcome"] == "not_found"
    assert len(standin.requests_to("POST", TASK_CANCEL)) == 1
    task.refresh_from_db()
    assert task.raw_state == "running"


def test_operation_unknown_to_beeos_fails_with_404(standin, gw):
    op = operation_pair(standin)
    standin.fail(OP_CANCEL, 404, method="POST")
    outcome = cancel_op(op, gw)
    assert outcome.result == "failed"
    assert "does not know this operation" in outcome.message
    assert the_audit(outcome).detail["upstream"]["status"] == 404
    assert len(standin.requests_to("POST", OP_CANCEL)) == 1


@pytest.mark.parametrize("kind", ["openapi", "operation", "a2a"])
def test_rate_limited_cancel_fails_with_the_wait_and_is_not_retried(standin, gw, kind):
    if kind == "openapi":
        obj = task_pair(standin, upstream_status="running", mirror_status="running")
        pattern, run = TASK_CANCEL, lambda: cancel(obj, gw)
    elif kind == "a2a":
        obj = a2a_pair(standin, upstream_state="TASK_STATE_WORKING", mirror_state="working")
        pattern, run = A2A_CANCEL, lambda: cancel(obj, gw)
    else:
        obj = operation_pair(standin)
        pattern, run = OP_CANCEL, lambda: cancel_op(obj, gw)
    standin.rate_limit(pattern, retry_after=7, method="POST")

    outcome = run()

    assert outcome.result == "failed"
    assert "rate limiting" in outcome.message and "7 s" in outcome.message
    assert outcome.answer.retry_after == 7
    assert (outcome.request.state, outcome.request.upstream_status) == ("failed", 429)
    entry = the_audit(outcome)
    assert entry.detail["upstream"]["status"] == 429
    assert entry.detail["upstream"]["outcome"] == "rate_limited"
    assert len(standin.requests_to("POST", pattern)) == 1  # no retry was sent
    assert standin.effects == []


# --- 6. after dispatch: uncertain; before dispatch: not sent -------------------------------------


def test_read_timeout_after_dispatch_is_uncertain_not_resent_and_reread(standin, gw, monkeypatch):
    monkeypatch.setattr(clients, "TIMEOUT", (1.0, 0.5))
    task = task_pair(standin, upstream_status="running", mirror_status="running")
    standin.delay(TASK_CANCEL, 1.0, method="POST")

    outcome = cancel(task, gw)

    assert outcome.result == "uncertain", outcome.message
    assert "not resent" in outcome.message
    assert outcome.request.state == "uncertain"
    assert outcome.request.upstream_status is None
    entry = the_audit(outcome)
    assert entry.detail["upstream"]["outcome"] == "uncertain"
    assert "Timeout" in entry.detail["upstream"]["error"]
    assert len(standin.requests_to("POST", TASK_CANCEL)) == 1
    assert reread_after_cancel(standin, TASK_CANCEL, f"/api/v1/agents/{AGENT}/tasks/{task.task_id}")
    task.refresh_from_db()  # it did take effect upstream; the re-read shows it
    assert task.raw_state == "canceled"


def test_operation_read_timeout_after_dispatch_is_uncertain(standin, gw, monkeypatch):
    monkeypatch.setattr(clients, "TIMEOUT", (1.0, 0.5))
    op = operation_pair(standin)
    standin.delay(OP_CANCEL, 1.0, method="POST")

    outcome = cancel_op(op, gw)

    assert outcome.result == "uncertain"
    assert "not resent" in outcome.message
    [post] = standin.requests_to("POST", OP_CANCEL)
    assert post.header("Idempotency-Key") == outcome.request.idempotency_key
    get_path = f"/api/v1/instances/{INSTANCE}/operations/{op.operation_id}"
    assert reread_after_cancel(standin, OP_CANCEL, get_path)
    assert the_audit(outcome).detail["upstream"]["outcome"] == "uncertain"


@pytest.mark.parametrize("kind", ["openapi", "operation", "a2a"])
def test_connection_lost_after_dispatch_is_uncertain_and_not_resent(standin, gw, kind):
    if kind == "openapi":
        obj = task_pair(standin, upstream_status="running", mirror_status="running")
        pattern, run = TASK_CANCEL, lambda: cancel(obj, gw)
    elif kind == "a2a":
        obj = a2a_pair(standin, upstream_state="TASK_STATE_WORKING", mirror_state="working")
        pattern, run = A2A_CANCEL, lambda: cancel(obj, gw)
    else:
        obj = operation_pair(standin)
        pattern, run = OP_CANCEL, lambda: cancel_op(obj, gw)
    standin.drop_connection(pattern, method="POST")

    outcome = run()

    assert outcome.result == "uncertain", outcome.message
    assert "not resent" in outcome.message
    assert outcome.request.state == "uncertain"
    assert the_audit(outcome).detail["upstream"]["outcome"] == "uncertain"
    [post] = standin.requests_to("POST", pattern)
    if kind == "operation":
        assert post.header("Idempotency-Key") == outcome.request.idempotency_key
    # A re-read was attempted after the POST.
    posted_at = standin.requests.index(post)
    assert any(r.method == "GET" for r in standin.requests[posted_at + 1 :])


def test_dropped_task_cancel_then_retry_by_operator_is_refused_without_a_call(standin, gw):
    """Uncertain + the re-read showed the end: the next click is refused locally."""
    task = task_pair(standin, upstream_status="running", mirror_status="running")
    standin.drop_connection(TASK_CANCEL, method="POST")
    first = cancel(task, gw)
    assert first.result == "uncertain"
    second = cancel(task, gw, actor=OMAR)
    assert second.result == "refused" and "already ended" in second.message
    assert len(standin.requests_to("POST", TASK_CANCEL)) == 1


@pytest.mark.parametrize("kind", ["openapi", "operation", "a2a"])
def test_failure_before_dispatch_is_not_sent_and_a_new_key_goes_through_later(standin, kind):
    if kind == "openapi":
        obj = task_pair(standin, upstream_status="running", mirror_status="running")
        pattern, run = TASK_CANCEL, lambda gw, **kw: cancel(obj, gw, **kw)
    elif kind == "a2a":
        obj = a2a_pair(standin, upstream_state="TASK_STATE_WORKING", mirror_state="working")
        pattern, run = A2A_CANCEL, lambda gw, **kw: cancel(obj, gw, **kw)
    else:
        obj = operation_pair(standin)
        pattern, run = OP_CANCEL, lambda gw, **kw: cancel_op(obj, gw, **kw)
    gw = make_gateway(standin)
    standin.stop()  # connection refused

    outcome = run(gw, idempotency_key="console-first")

    assert outcome.result == "not_sent", outcome.message
    assert "safe to retry" in outcome.message.lower()
    assert outcome.request.state == "not_sent"
    [entry] = audits(outcome.request.object_kind, outcome.request.object_id)
    assert entry.detail["result"] == "not_sent"
    assert entry.detail["idempotency_key"] == "console-first"
    assert entry.detail["upstream"]["outcome"] == "not_sent"
    assert standin.requests == []

    standin.start()  # same port
    again = run(gw, idempotency_key="console-second")
    assert again.ok and not again.replayed, again.message
    assert again.request.pk != outcome.request.pk
    [post] = standin.requests_to("POST", pattern)
    if kind == "operation":
        assert post.header("Idempotency-Key") == "console-second"
    assert len(audits(outcome.request.object_kind, outcome.request.object_id)) == 2
    gw.client.rest_client.pool_manager.clear()


# --- 7. terminal in the mirror: no call -------------------------------------------------------


def test_terminal_in_the_mirror_is_refused_without_any_upstream_call(standin, gw):
    task = task_pair(standin, upstream_status="running", mirror_status="completed")
    a2a = a2a_pair(standin, upstream_state="TASK_STATE_WORKING", mirror_state="completed")
    op = operation_pair(standin, status="succeeded")

    for outcome in (cancel(task, gw), cancel(a2a, gw), cancel_op(op, gw)):
        assert outcome.result == "refused"
        assert "No call was made" in outcome.message
        assert outcome.request.state == "refused"
        entry = the_audit(outcome)
        assert entry.detail["upstream"] is None
        assert entry.before == entry.after
    assert standin.requests == []


# --- 8. double submit ----------------------------------------------------------------------


def test_double_submit_with_the_same_key_is_one_call(standin, gw):
    task = task_pair(standin, upstream_status="running", mirror_status="running")
    op = operation_pair(standin)

    first = cancel(task, gw, idempotency_key="dbl-task")
    second = cancel(task, gw, idempotency_key="dbl-task")
    op_first = cancel_op(op, gw, idempotency_key="dbl-op")
    op_second = cancel_op(op, gw, idempotency_key="dbl-op")

    assert (first.result, first.replayed) == ("cancelled", False)
    assert (second.result, second.replayed) == ("cancelled", True)
    assert second.request.pk == first.request.pk and second.message == first.message
    assert (op_first.result, op_second.result, op_second.replayed) == (
        "cancelled",
        "cancelled",
        True,
    )
    assert len(standin.requests_to("POST", TASK_CANCEL)) == 1
    assert len(standin.requests_to("POST", OP_CANCEL)) == 1
    assert CancelRequest.objects.count() == 2
    assert len(audits("task", task.task_id)) == 1
    assert len(audits("operation", op.operation_id)) == 1


# --- 9. two operators at the same moment (real concurrent connections) ----------------------


def _race(standin: BeeOSStandIn, run) -> list:
    """Run ``run(actor, gateway)`` in two threads released together; their outcomes."""
    barrier = threading.Barrier(2)
    outcomes: list = []
    errors: list[BaseException] = []

    def worker(actor: Actor) -> None:
        gateway = make_gateway(standin)
        try:
            barrier.wait(timeout=5)
            outcomes.append(run(actor, gateway))
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            errors.append(exc)
        finally:
            gateway.client.rest_client.pool_manager.clear()
            connection.close()

    threads = [threading.Thread(target=worker, args=(a,)) for a in (OLGA, OMAR)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=15)
    assert errors == []
    assert len(outcomes) == 2
    return outcomes


@pytest.mark.django_db(transaction=True)
def test_two_operators_cancel_the_same_task_at_once(standin):
    task = task_pair(standin, upstream_status="running", mirror_status="running")
    standin.delay(TASK_CANCEL, 0.5, method="POST")

    outcomes = _race(
        standin, lambda actor, gateway: cancel(task, gateway, actor=actor, reason="stuck")
    )

    assert sorted(o.result for o in outcomes) == ["already_requested", "cancelled"]
    loser = next(o for o in outcomes if o.result == "already_requested")
    assert "in flight" in loser.message
    assert len(standin.requests_to("POST", TASK_CANCEL)) == 1
    assert len(standin.effects_of("task.cancel")) == 1
    entries = audits("task", task.task_id)
    assert sorted(e.detail["result"] for e in entries) == ["already_requested", "cancelled"]
    assert sorted(e.actor for e in entries) == ["olga-operator", "omar-operator"]
    assert not CancelRequest.objects.filter(state="open").exists()
    task.refresh_from_db()
    assert task.raw_state == "canceled"


@pytest.mark.django_db(transaction=True)
def test_two_operators_cancel_the_same_operation_at_once(standin):
    standin.cancel_settle_seconds = None
    op = operation_pair(standin)
    standin.delay(OP_CANCEL, 0.5, method="POST")

    outcomes = _race(
        standin, lambda actor, gateway: cancel_op(op, gateway, actor=actor, reason="stuck")
    )

    assert sorted(o.result for o in outcomes) == ["already_requested", "cancel_requested"]
    posts = standin.requests_to("POST", OP_CANCEL)
    assert len(posts) == 1
    winner = next(o for o in outcomes if o.result == "cancel_requested")
    assert posts[0].header("Idempotency-Key") == winner.request.idempotency_key
    assert len(standin.effects_of("operation.cancel_requested")) == 1
    entries = audits("operation", op.operation_id)
    assert sorted(e.detail["result"] for e in entries) == ["already_requested", "cancel_requested"]
    assert not CancelRequest.objects.filter(state="open").exists()


# --- 10. a cancel racing an ingest that completes the task -----------------------------------


def _completed_snapshot(task: Task) -> dict:
    done = T0 + dt.timedelta(minutes=5)
    return {
        "task_id": task.task_id,
        "agent_id": task.agent_id,
        "status": "completed",
        "created_at": iso(T0),
        "updated_at": iso(done),
        "completed_at": iso(done),
    }


def test_ingest_completing_the_task_during_a_local_cancel_wins(standin, monkeypatch):
    task = task_pair(standin, upstream_status="running", mirror_status="running")
    real = LocalGateway.cancel_task

    def completes_first(self, obj, **kw):
        # The refusal check has passed; a webhook lands before the cancel applies.
        ingest_openapi_task(_completed_snapshot(obj), actor=FEEDER)
        return real(self, obj, **kw)

    monkeypatch.setattr(LocalGateway, "cancel_task", completes_first)

    outcome = cancel(task, LocalGateway())

    assert outcome.result == "refused", outcome.message
    assert "final state stands" in outcome.message
    task.refresh_from_db()
    assert (task.raw_state, task.status) == ("completed", "completed")
    [entry] = audits("task", task.task_id)
    assert entry.detail["result"] == "refused"
    assert entry.before["raw_state"] == "running"
    assert entry.after["raw_state"] == "completed"


def test_task_completing_upstream_during_a_beeos_cancel_wins(standin, gw, monkeypatch):
    task = task_pair(standin, upstream_status="running", mirror_status="running")
    real = BeeOSGateway.cancel_task

    def completes_first(self, obj, **kw):
        # Between the refusal check and the call the task ends upstream, and the
        # webhook's snapshot is ingested; then the cancel reaches BeeOS.
        standin.set_task_status(obj.task_id, "completed")
        ingest_openapi_task(_completed_snapshot(obj), actor=FEEDER)
        return real(self, obj, **kw)

    monkeypatch.setattr(BeeOSGateway, "cancel_task", completes_first)

    outcome = cancel(task, gw)

    assert outcome.result == "refused", outcome.message
    assert "already closed" in outcome.message
    task.refresh_from_db()
    assert task.status == "completed"
    [entry] = audits("task", task.task_id)
    assert entry.detail["result"] == "refused"
    assert entry.after["status"] == "completed"
    assert len(standin.requests_to("POST", TASK_CANCEL)) == 1
    assert standin.effects == []


@pytest.mark.django_db(transaction=True)
def test_ingest_thread_completing_the_task_while_the_cancel_is_in_flight(standin):
    """A real second connection ingests the end while the cancel call is held upstream."""
    task = task_pair(standin, upstream_status="running", mirror_status="running")
    ingested = threading.Event()

    def ingest_end() -> None:
        try:
            standin.wait_for(lambda: standin.requests_to("POST", TASK_CANCEL), timeout=5)
            ingest_openapi_task(_completed_snapshot(task), actor=FEEDER)
            ingested.set()
        finally:
            connection.close()

    # The task ended upstream a moment before the cancel arrived: BeeOS answers 409,
    # slowly, and the completed snapshot lands in the mirror in the meantime.
    standin.set_task_status(task.task_id, "completed")
    standin.delay(TASK_CANCEL, 0.5, method="POST")
    thread = threading.Thread(target=ingest_end)
    thread.start()
    gateway = make_gateway(standin)
    try:
        outcome = cancel(task, gateway)
    finally:
        thread.join(timeout=10)
        gateway.client.rest_client.pool_manager.clear()

    assert ingested.is_set()
    assert outcome.result == "refused", outcome.message
    task.refresh_from_db()
    assert (task.raw_state, task.status) == ("completed", "completed")
    [entry] = audits("task", task.task_id)
    assert entry.detail["result"] == "refused"
    assert entry.after["raw_state"] == "completed"
    assert len(standin.requests_to("POST", TASK_CANCEL)) == 1


# --- a gateway that blows up ----------------------------------------------------------------


def test_an_unexpected_gateway_error_is_audited_and_does_not_block_the_next_cancel(
    standin, gw, monkeypatch
):
    task = task_pair(standin, upstream_status="running", mirror_status="running")

    def broken(self, obj, **kw):
        raise KeyError("surprise")

    with monkeypatch.context() as patched:
        patched.setattr(BeeOSGateway, "cancel_task", broken)
        outcome = cancel(task, gw)

    assert outcome.result == "uncertain" and "not resent" in outcome.message
    assert outcome.request.state == "uncertain"  # closed, not left "open"
    assert the_audit(outcome).detail["upstream"]["error"] == "KeyError"
    # The re-read happened; the next attempt is not blocked by a stuck open request.
    assert ("GET", f"/api/v1/agents/{AGENT}/tasks/{task.task_id}") in paths(standin)
    again = cancel(task, gw, actor=OMAR)
    assert again.result == "cancelled", again.message
    assert len(standin.requests_to("POST", TASK_CANCEL)) == 1
