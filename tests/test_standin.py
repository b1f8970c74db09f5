"""The BeeOS stand-in, driven only through the official SDK clients.

Each test also pins *how the SDK reports the outcome* (return type, exception class,
``status`` / ``headers`` / ``data`` / ``body``): the console's gateway relies on exactly
that. No database: these tests do not use the ``db`` fixture.

Cheat sheet (beeos_sdk 0.8.0, beeos_cloud_sdk 3.1.0):

* beeos_sdk 2xx -> the response model (``TaskResponse`` ... envelopes for tasks;
  bare ``RuntimeOperationSnapshot`` / ``ServiceOperationsListResponse`` /
  ``ServiceOperationCancelAccepted`` for operations; ``str`` for the SSE stream).
* beeos_sdk 4xx/5xx -> ``ApiException`` subclasses by status: 400 BadRequestException,
  401 UnauthorizedException, 403 ForbiddenException, 404 NotFoundException,
  409 ConflictException, 422 UnprocessableEntityException, 5xx ServiceException, anything
  else (429!) the base ``ApiException``. ``.data`` is the model of the operation's response
  map for that status (``None`` when the status is not in the map or the body does not
  validate), ``.body`` the raw text, ``.headers`` a case-insensitive ``HTTPHeaderDict``.
* Transport failures are *not* ApiException: raw urllib3 errors. After dispatch (POST):
  ``ReadTimeoutError`` / ``ProtocolError``; GETs are retried by urllib3 and end as
  ``MaxRetryError(reason=ReadTimeoutError|ProtocolError)``. Before dispatch:
  ``MaxRetryError(reason=NewConnectionError)``.
* beeos_cloud_sdk non-2xx -> ``APIError(status, body)`` (flat ``{code, message,
  request_id}``; no headers: use ``exc.__cause__.headers``). Transport: ``URLError`` before
  dispatch; bare ``TimeoutError`` / ``http.client.RemoteDisconnected`` after dispatch.
"""

from __future__ import annotations

import datetime as dt
import http.client
import time
import urllib.error
import uuid

import beeos_cloud_sdk as cloud
import pytest
import urllib3
from beeos_sdk import ApiClient, Configuration
from beeos_sdk.api import DefaultApi, TasksApi
from beeos_sdk.exceptions import (
    ApiException,
    BadRequestException,
    ConflictException,
    NotFoundException,
    ServiceException,
    UnauthorizedException,
)
from beeos_sdk.models import (
    CancelTaskRequest,
    ErrorResponse,
    ListMessagesResponse,
    ListTasksResponse,
    RuntimeOperationEventEnvelope,
    RuntimeOperationSnapshot,
    ServiceOperationCancelAccepted,
    ServiceOperationCancelConflict,
    ServiceOperationCursorConflict,
    ServiceOperationsListResponse,
    TaskResponse,
    TaskStatus,
)
from pydantic import ValidationError

from tests.standin import BeeOSStandIn, ContractError, parse_sse

API_KEY = "oag_standin_test_key"
INSTANCE = "inst_console_test"
T0 = dt.datetime(2026, 11, 1, 12, 0, tzinfo=dt.UTC)


@pytest.fixture
def server():
    with BeeOSStandIn(api_key=API_KEY) as standin:
        yield standin
    assert standin.errors == []  # the stand-in itself never crashed


def _client(server: BeeOSStandIn, **config) -> ApiClient:
    config.setdefault("retries", 0)  # what the gateway should do: no hidden urllib3 retries
    return ApiClient(Configuration(host=server.url, access_token=API_KEY, **config))


@pytest.fixture
def api_client(server):
    client = _client(server)
    yield client
    client.rest_client.pool_manager.clear()  # ApiClient.__exit__ is a no-op


@pytest.fixture
def tasks_api(api_client) -> TasksApi:
    return TasksApi(api_client)


@pytest.fixture
def ops_api(api_client) -> DefaultApi:
    return DefaultApi(api_client)


@pytest.fixture
def cloud_client(server) -> cloud.BeeOSClient:
    return cloud.BeeOSClient(server.cloud_url, API_KEY, timeout=5)


# --- auth ----------------------------------------------------------------------------


def test_bearer_key_is_required_on_both_surfaces(server):
    server.add_task("task_auth", agent_id="agent_a", status="running")
    wrong = TasksApi(ApiClient(Configuration(host=server.url, access_token="oag_wrong")))
    with pytest.raises(UnauthorizedException) as caught:
        wrong.get_task("agent_a", "task_auth")
    assert caught.value.status == 401
    assert isinstance(caught.value.data, ErrorResponse)
    assert caught.value.data.error.code == "invalid_token"
    assert caught.value.headers["www-authenticate"] == "Bearer"  # case-insensitive dict

    anonymous = TasksApi(ApiClient(Configuration(host=server.url)))  # no access_token
    with pytest.raises(UnauthorizedException) as caught:
        anonymous.get_task("agent_a", "task_auth")
    assert caught.value.data.error.code == "unauthorized"
    assert server.requests[-1].header("Authorization") is None

    with pytest.raises(cloud.APIError) as cloud_caught:
        cloud.BeeOSClient(server.cloud_url, "bsk_wrong").a2a.list_tasks("agent_a")
    assert cloud_caught.value.status == 401
    assert cloud_caught.value.body["code"] == "invalid_token"

    TasksApi(_client(server)).get_task("agent_a", "task_auth")
    assert server.requests[-1].header("authorization") == f"Bearer {API_KEY}"


# --- OpenAPI tasks ---------------------------------------------------------------------


def _seed_tasks(server: BeeOSStandIn) -> None:
    for i, (agent, status) in enumerate(
        [
            ("agent_a", "queued"),
            ("agent_a", "running"),
            ("agent_b", "input_required"),
            ("agent_a", "completed"),
            ("agent_b", "running"),
        ]
    ):
        server.add_task(
            f"task_{i}",
            agent_id=agent,
            status=status,
            created_at=T0 + dt.timedelta(minutes=i),
            instance_id=INSTANCE if agent == "agent_b" else None,
            metadata={"seq": str(i)},
        )


def test_list_user_tasks_pages_newest_first_with_next_since(server, tasks_api):
    _seed_tasks(server)
    first = tasks_api.list_user_tasks(limit=2)
    assert isinstance(first, ListTasksResponse) and first.success is True
    assert [t.task_id for t in first.data.tasks] == ["task_4", "task_2"]  # active only
    assert first.data.next_since  # opaque cursor
    second = tasks_api.list_user_tasks(limit=2, since=first.data.next_since)
    assert [t.task_id for t in second.data.tasks] == ["task_1", "task_0"]
    assert second.data.next_since == ""  # empty at the end (the contract's wording)

    everything = tasks_api.list_user_tasks(state="all", limit=100)
    assert [t.task_id for t in everything.data.tasks] == [f"task_{i}" for i in (4, 3, 2, 1, 0)]
    closed = tasks_api.list_user_tasks(state="closed").data.tasks
    assert [(t.task_id, t.state, t.close_reason) for t in closed] == [
        ("task_3", "closed", "completed")
    ]
    by_instance = tasks_api.list_user_tasks(instance_id=INSTANCE, state="open")
    assert {t.task_id for t in by_instance.data.tasks} == {"task_2", "task_4"}
    by_agent = tasks_api.list_user_tasks(agent_id="agent_a", state="all")
    assert {t.agent_id for t in by_agent.data.tasks} == {"agent_a"}
    request = server.requests_to("GET", "/api/v1/tasks")[-1]
    assert request.query == {"agent_id": ["agent_a"], "state": ["all"]}

    with pytest.raises(BadRequestException) as caught:
        tasks_api.list_user_tasks(state="bogus")  # the SDK types state as a plain str
    assert caught.value.data.error.code == "invalid_param"
    assert caught.value.data.error.param == "state"


def test_list_agent_tasks_and_get_task(server, tasks_api):
    _seed_tasks(server)
    listed = tasks_api.list_agent_tasks("agent_b", limit=1)
    assert [t.task_id for t in listed.data.tasks] == ["task_4"]
    rest = tasks_api.list_agent_tasks("agent_b", since=listed.data.next_since)
    assert [t.task_id for t in rest.data.tasks] == ["task_2"]

    snapshot = tasks_api.get_task("agent_a", "task_1")
    assert isinstance(snapshot, TaskResponse)
    assert snapshot.data.status is TaskStatus.RUNNING
    assert snapshot.data.created_at == T0 + dt.timedelta(minutes=1)
    assert snapshot.data.metadata == {"seq": "1"}

    with pytest.raises(NotFoundException) as caught:
        tasks_api.get_task("agent_b", "task_1")  # wrong agent: not visible
    assert caught.value.status == 404
    assert caught.value.data.error.code == "agent_not_found"
    assert caught.value.data.error.request_id == caught.value.headers["X-Request-Id"]
    with pytest.raises(NotFoundException):
        tasks_api.list_agent_tasks("agent_unknown")


def test_list_task_messages_pages_by_offset_and_hides_deltas(server, tasks_api):
    task = server.add_task("task_msgs", agent_id="agent_a", status="running")
    request_id = str(uuid.uuid4())
    server.add_envelope(
        task.task_id,
        {
            "id": request_id,
            "conversation_id": str(uuid.uuid4()),
            "type": "chat_message",
            "sender": "user:ada",
            "body": "Summarise the escalations.",
            "state": "completed",
            "stop_reason": "end_turn",
            "created_at": "2026-11-01T12:00:00Z",
        },
    )
    server.add_message(task.task_id, type="agent_reply_delta", body="Fou")
    server.add_message(task.task_id, type="tool_call", body="", offset=5)  # holes are legal
    server.add_message(
        task.task_id,
        type="agent_reply",
        body="Found 14 escalations.",
        in_reply_to=request_id,
        state="completed",
        stop_reason="end_turn",
    )

    page = tasks_api.list_task_messages("agent_a", "task_msgs", limit=2)
    assert isinstance(page, ListMessagesResponse)
    assert [(m.offset, m.type) for m in page.data.messages] == [
        (1, "chat_message"),
        (5, "tool_call"),
    ]
    assert page.data.messages[0].message_id == request_id  # MessageEnvelope.id
    assert page.data.messages[0].publisher_id == "user:ada"  # MessageEnvelope.sender
    assert page.data.has_more is True
    assert page.data.latest_offset == 6
    assert page.data.next_since == "5"  # a *string*, while the since parameter is an int
    rest = tasks_api.list_task_messages("agent_a", "task_msgs", since=int(page.data.next_since))
    assert [m.offset for m in rest.data.messages] == [6]
    assert rest.data.has_more is False
    assert rest.data.messages[0].stop_reason.value == "end_turn"

    with_deltas = tasks_api.list_task_messages("agent_a", "task_msgs", include_deltas=True)
    assert [m.offset for m in with_deltas.data.messages] == [1, 2, 5, 6]
    assert server.requests[-1].query["include_deltas"] == ["true"]


# --- OpenAPI task cancel ------------------------------------------------------------------


def test_cancel_task_closes_it_once_and_replays_idempotently(server, tasks_api):
    server.add_task("task_c", agent_id="agent_a", status="running")
    answer = tasks_api.cancel_task(
        "agent_a", "task_c", CancelTaskRequest(reason="operator: stuck for 3 h")
    )
    assert isinstance(answer, TaskResponse)
    assert answer.data.status is TaskStatus.CANCELED
    assert answer.data.completed_at is not None
    assert server.task("task_c").status is TaskStatus.CANCELED  # real state change
    cancel_message = server.messages("task_c")[-1]
    assert cancel_message.type == "chat_cancel"
    assert cancel_message.payload == {"reason": "operator: stuck for 3 h"}
    assert server.requests_to("POST", "*/cancel")[0].json == {"reason": "operator: stuck for 3 h"}

    again = tasks_api.cancel_task("agent_a", "task_c")  # documented: a no-op, still 200
    assert again.data.status is TaskStatus.CANCELED
    assert len(server.requests_to("POST", "/api/v1/agents/agent_a/tasks/task_c/cancel")) == 2
    assert len(server.effects_of("task.cancel", "task_c")) == 1  # one effect only
    assert [m.type for m in server.messages("task_c")].count("chat_cancel") == 1


def test_cancel_task_that_already_closed_is_409_conflict(server, tasks_api):
    server.add_task("task_done", agent_id="agent_a", status="completed", result="Indexed.")
    with pytest.raises(ConflictException) as caught:
        tasks_api.cancel_task("agent_a", "task_done")
    error = caught.value.data
    assert caught.value.status == 409
    assert isinstance(error, ErrorResponse) and error.success is False
    assert (error.error.type, error.error.code, error.error.message) == (
        "conflict_error",
        "conflict",
        "task is already closed",
    )
    assert server.task("task_done").status is TaskStatus.COMPLETED
    assert server.effects == []
    with pytest.raises(NotFoundException):
        tasks_api.cancel_task("agent_a", "task_missing")


# --- runtime operations -----------------------------------------------------------------


def test_list_and_get_operations_and_stream_events(server, ops_api):
    ops = [
        server.add_operation(
            instance_id=INSTANCE,
            method=method,
            status=status,
            created_at=T0 + dt.timedelta(seconds=i),
        )
        for i, (method, status) in enumerate(
            [
                ("session/set_model", "running"),
                ("skills/install", "queued"),
                ("cron/add", "succeeded"),
                ("mcp/set", "projection_pending"),
            ]
        )
    ]
    page = ops_api.list_runtime_operations(status="active", instance_id=INSTANCE, limit=2)
    assert isinstance(page, ServiceOperationsListResponse)  # no {success, data} envelope
    assert [o.id for o in page.operations] == [ops[0].id, ops[1].id]
    assert page.next_cursor
    rest = ops_api.list_runtime_operations("active", INSTANCE, cursor=page.next_cursor)
    assert [o.id for o in rest.operations] == [ops[3].id]  # terminal ones are not active
    assert rest.next_cursor is None
    with pytest.raises(BadRequestException):
        ops_api.list_runtime_operations(status="all", instance_id=INSTANCE)
    with pytest.raises(NotFoundException):
        ops_api.list_runtime_operations(status="active", instance_id="inst_unknown")

    op = ops[0]
    server.add_event(op.id, "runtime_operation_started", payload={"executionMode": "start"})
    server.add_event(
        op.id, "runtime_operation_progress", payload={"phase": "download", "current": 1, "total": 3}
    )
    snapshot = ops_api.get_runtime_operation(instance_id=INSTANCE, operation_id=op.id)
    assert isinstance(snapshot, RuntimeOperationSnapshot)
    assert (snapshot.status, snapshot.effect_state, snapshot.terminal) == (
        "running",
        "running",
        False,
    )
    assert (snapshot.sequence, snapshot.cursor) == ("2", "2")
    assert snapshot.target.actual_instance.scope == "conversation"

    stream = ops_api.stream_runtime_operation_events(instance_id=INSTANCE, operation_id=op.id)
    assert isinstance(stream, str)  # the SDK hands back the raw SSE text, read to the end
    frames = parse_sse(stream)
    events = [RuntimeOperationEventEnvelope.from_dict(f["data"]) for f in frames]
    assert [f["id"] for f in frames] == ["1", "2"]
    assert [e.event.type for e in events] == [
        "runtime_operation_started",
        "runtime_operation_progress",
    ]
    assert events[1].event.payload.phase == "download"
    # Surprise: the SDK asks for JSON on the SSE route (select_header_accept prefers JSON).
    assert server.requests[-1].header("Accept") == "application/json"

    resumed = ops_api.stream_runtime_operation_events(INSTANCE, op.id, last_event_id="1")
    assert [f["id"] for f in parse_sse(resumed)] == ["2"]
    assert server.requests[-1].header("Last-Event-ID") == "1"
    with pytest.raises(ConflictException) as caught:
        ops_api.stream_runtime_operation_events(INSTANCE, op.id, last_event_id="9")
    assert isinstance(caught.value.data, ServiceOperationCursorConflict)
    assert (caught.value.data.cursor, caught.value.data.last_sequence) == ("9", "2")
    with pytest.raises(NotFoundException) as caught:
        ops_api.get_runtime_operation(INSTANCE, str(uuid.uuid4()))
    assert caught.value.data.error.code == "OPERATION_NOT_FOUND"


def test_cancel_operation_202_then_cancelled(server, ops_api):
    op = server.add_operation(instance_id=INSTANCE, method="session/set_model", status="running")
    key = str(uuid.uuid4())
    answer = ops_api.cancel_runtime_operation_with_http_info(
        idempotency_key=key, instance_id=INSTANCE, operation_id=op.id
    )
    assert answer.status_code == 202
    assert isinstance(answer.data, ServiceOperationCancelAccepted)
    assert (answer.data.status, answer.data.operation_id) == ("cancel_requested", op.id)
    assert answer.headers["X-BeeOS-Operation-Id"] == op.id

    (call,) = server.requests_to("POST", "/api/v1/instances/*/operations/*/cancel")
    assert call.header("Idempotency-Key") == key
    assert call.body == b""  # the SDK has no body parameter: no reason can travel upstream

    after = ops_api.get_runtime_operation(INSTANCE, op.id)
    assert after.cancel_request.requested_by == server.principal
    assert (after.status, after.effect_state, after.terminal) == ("cancelled", "cancelled", True)
    assert after.error.code == "OPERATION_CANCELLED"
    assert [e.event.type for e in server.events(op.id)] == [
        "runtime_operation_cancel_requested",
        "runtime_rpc_response",
    ]


def test_cancel_operation_can_stay_cancel_requested(server, ops_api):
    server.cancel_settle_seconds = None  # settle by hand
    op = server.add_operation(instance_id=INSTANCE, method="cron/run", status="queued")
    ops_api.cancel_runtime_operation(
        idempotency_key="k-1", instance_id=INSTANCE, operation_id=op.id
    )
    pending = ops_api.get_runtime_operation(INSTANCE, op.id)
    assert pending.cancel_request is not None and pending.status == "queued"
    server.settle_cancel(op.id)
    assert ops_api.get_runtime_operation(INSTANCE, op.id).status == "cancelled"


def test_cancel_operation_replays_the_same_answer_for_the_same_key(server, ops_api):
    op = server.add_operation(instance_id=INSTANCE, status="running")
    first = ops_api.cancel_runtime_operation(
        idempotency_key="cancel-1", instance_id=INSTANCE, operation_id=op.id
    )
    replay = ops_api.cancel_runtime_operation(
        idempotency_key="cancel-1", instance_id=INSTANCE, operation_id=op.id
    )
    assert replay == first  # same 202 although the operation is cancelled by now
    assert len(server.requests_to("POST", "*/cancel")) == 2
    assert len(server.effects_of("operation.cancel_requested", op.id)) == 1
    assert len(server.effects_of("operation.cancelled", op.id)) == 1

    with pytest.raises(ConflictException):  # a *new* key sees the current state
        ops_api.cancel_runtime_operation(
            idempotency_key="cancel-2", instance_id=INSTANCE, operation_id=op.id
        )
    other = server.add_operation(instance_id=INSTANCE, status="running")
    with pytest.raises(ApiException) as caught:  # key reused for another operation
        ops_api.cancel_runtime_operation(
            idempotency_key="cancel-1", instance_id=INSTANCE, operation_id=other.id
        )
    assert caught.value.status == 422
    assert caught.value.data.error.code == "IDEMPOTENCY_CONFLICT"


@pytest.mark.parametrize(
    "status", ["runtime_committed", "projection_pending", "succeeded", "outcome_unknown"]
)
def test_cancel_operation_past_running_is_409_not_cancellable(server, ops_api, status):
    op = server.add_operation(instance_id=INSTANCE, method="agent/update", status=status)
    with pytest.raises(ConflictException) as caught:
        ops_api.cancel_runtime_operation(
            idempotency_key=f"k-{status}", instance_id=INSTANCE, operation_id=op.id
        )
    conflict = caught.value.data
    assert isinstance(conflict, ServiceOperationCancelConflict)  # not ErrorResponse
    assert (conflict.code, conflict.operation_id, conflict.http_status) == (
        "OPERATION_NOT_CANCELLABLE",
        op.id,
        409,
    )
    assert server.operation(op.id).status == status
    assert server.operation(op.id).cancel_request is None


def test_cancel_operation_without_idempotency_key(server, api_client, ops_api):
    op = server.add_operation(instance_id=INSTANCE, status="running")
    # The SDK method refuses to send it: pydantic validation, no request at all.
    with pytest.raises(ValidationError):
        ops_api.cancel_runtime_operation(
            idempotency_key="", instance_id=INSTANCE, operation_id=op.id
        )
    assert server.requests == []
    # The server side of the contract, through the SDK's own ApiClient plumbing.
    params = api_client.param_serialize(
        method="POST",
        resource_path="/api/v1/instances/{instanceId}/operations/{operationId}/cancel",
        path_params={"instanceId": INSTANCE, "operationId": op.id},
        header_params={"Accept": "application/json"},
        auth_settings=["bearerAuth"],
    )
    raw = api_client.call_api(*params)
    raw.read()
    with pytest.raises(BadRequestException) as caught:
        api_client.response_deserialize(
            raw, {"202": "ServiceOperationCancelAccepted", "400": "ErrorResponse"}
        )
    assert caught.value.data.error.code == "missing_param"
    assert caught.value.data.error.param == "Idempotency-Key"
    assert server.operation(op.id).cancel_request is None


def test_cancel_unknown_operation_is_404(server, ops_api):
    server.add_instance(INSTANCE)
    with pytest.raises(NotFoundException) as caught:
        ops_api.cancel_runtime_operation(
            idempotency_key="k", instance_id=INSTANCE, operation_id=str(uuid.uuid4())
        )
    assert isinstance(caught.value.data, ErrorResponse)


# --- faults: 429, status + body, timeouts, lost connections, refused -----------------------


def test_429_on_cancel_surfaces_retry_after_in_the_exception_headers(server, ops_api, tasks_api):
    op = server.add_operation(instance_id=INSTANCE, status="running")
    server.add_task("task_r", agent_id="agent_a", status="running")
    server.rate_limit("*/cancel", times=2, retry_after=7, method="POST")

    with pytest.raises(ApiException) as caught:
        ops_api.cancel_runtime_operation(
            idempotency_key="k", instance_id=INSTANCE, operation_id=op.id
        )
    exc = caught.value
    assert type(exc) is ApiException and exc.status == 429  # no dedicated 429 class
    assert exc.headers["Retry-After"] == "7"
    assert exc.data is None  # 429 is not in this operation's response map ...
    assert ErrorResponse.from_json(exc.body).error.code == "rate_limited"  # ... body is

    with pytest.raises(ApiException) as caught:
        tasks_api.cancel_task("agent_a", "task_r")
    assert caught.value.status == 429
    assert caught.value.data.error.code == "rate_limited"  # 429 is in the tasks map
    assert server.effects == []  # rate limited before any effect

    assert ops_api.cancel_runtime_operation("k", INSTANCE, op.id).status == "cancel_requested"
    assert [r.fault for r in server.requests_to("POST", "*/cancel")] == ["respond", "respond", None]


def test_429_on_a_get_is_retried_silently_by_urllib3_unless_retries_are_off(server):
    server.add_task("task_g", agent_id="agent_a", status="running")
    default = TasksApi(_client(server, retries=None))  # Configuration() default
    server.rate_limit("/api/v1/agents/agent_a/tasks/task_g", times=1, retry_after=0)
    assert default.get_task("agent_a", "task_g").data.task_id == "task_g"  # no exception
    assert len(server.requests) == 2  # urllib3 honoured Retry-After and asked again

    server.rate_limit("/api/v1/agents/agent_a/tasks/task_g", times=1, retry_after=0)
    with pytest.raises(ApiException) as caught:
        TasksApi(_client(server, retries=0)).get_task("agent_a", "task_g")
    assert caught.value.status == 429 and caught.value.headers["Retry-After"] == "0"


def test_injected_status_and_body(server, tasks_api, ops_api):
    server.add_task("task_f", agent_id="agent_a", status="running")
    server.fail("/api/v1/agents/*/tasks/task_f", 503)
    with pytest.raises(ServiceException) as caught:
        tasks_api.get_task("agent_a", "task_f")
    assert caught.value.data.error.code == "agent_service_unavailable"

    server.fail(
        "/api/v1/agents/*/tasks/task_f", 502, "<html>bad gateway</html>", content_type="text/html"
    )
    with pytest.raises(ServiceException) as caught:
        tasks_api.get_task("agent_a", "task_f")
    # A body that does not fit the error model: the SDK swallows the validation error.
    assert caught.value.data is None
    assert caught.value.body == "<html>bad gateway</html>"
    server.fail("/api/v1/agents/*/tasks/task_f", 500, {"error": "boom"})
    with pytest.raises(ServiceException) as caught:
        tasks_api.get_task("agent_a", "task_f")
    assert caught.value.data is None and caught.value.body == '{"error":"boom"}'
    assert tasks_api.get_task("agent_a", "task_f").data.status is TaskStatus.RUNNING


def test_read_timeout_after_dispatch_leaves_an_uncertain_but_applied_cancel(
    server, ops_api, tasks_api
):
    server.add_task("task_t", agent_id="agent_a", status="running")
    op = server.add_operation(instance_id=INSTANCE, status="running")
    server.delay("*/cancel", 0.5, times=2)

    with pytest.raises(urllib3.exceptions.ReadTimeoutError):  # not an ApiException
        tasks_api.cancel_task("agent_a", "task_t", _request_timeout=(1.0, 0.15))
    with pytest.raises(urllib3.exceptions.ReadTimeoutError):
        ops_api.cancel_runtime_operation("k-t", INSTANCE, op.id, _request_timeout=(1.0, 0.15))
    assert server.wait_for(lambda: len(server.effects) == 3)  # cancel, requested, cancelled
    assert len(server.requests_to("POST", "*/cancel")) == 2  # each sent exactly once
    # The effect happened upstream: re-read instead of resending.
    assert tasks_api.get_task("agent_a", "task_t").data.status is TaskStatus.CANCELED
    assert ops_api.get_runtime_operation(INSTANCE, op.id).status == "cancelled"


def test_read_timeout_on_a_get_is_retried_by_default(server):
    server.add_task("task_slow", agent_id="agent_a", status="running")
    server.delay("/api/v1/agents/agent_a/tasks/task_slow", 0.4, times=None)
    with pytest.raises(urllib3.exceptions.MaxRetryError) as caught:
        TasksApi(_client(server, retries=None)).get_task(
            "agent_a", "task_slow", _request_timeout=(1.0, 0.1)
        )
    assert isinstance(caught.value.reason, urllib3.exceptions.ReadTimeoutError)
    assert len(server.requests) == 4  # 1 + urllib3's 3 default retries


def test_connection_lost_after_dispatch(server, tasks_api, ops_api):
    server.add_task("task_l", agent_id="agent_a", status="running")
    op = server.add_operation(instance_id=INSTANCE, status="running")
    server.drop_connection("*/cancel", times=2)
    with pytest.raises(urllib3.exceptions.ProtocolError) as caught:
        tasks_api.cancel_task("agent_a", "task_l")
    assert isinstance(caught.value.args[1], http.client.RemoteDisconnected)
    with pytest.raises(urllib3.exceptions.ProtocolError):
        ops_api.cancel_runtime_operation("k-l", INSTANCE, op.id)
    assert len(server.requests_to("POST", "*/cancel")) == 2
    assert server.task("task_l").status is TaskStatus.CANCELED  # answer lost, effect applied
    assert server.operation(op.id).status == "cancelled"

    server.drop_connection("*/cancel", apply_effect=False)  # lost before the handler ran
    other = server.add_operation(instance_id=INSTANCE, status="running")
    with pytest.raises(urllib3.exceptions.ProtocolError):
        ops_api.cancel_runtime_operation("k-l2", INSTANCE, other.id)
    assert server.operation(other.id).cancel_request is None


def test_connection_refused_before_dispatch(server, tasks_api, cloud_client):
    server.add_task("task_x", agent_id="agent_a", status="running")
    server.add_a2a_task(task_id="a2a_x", agent_id="agent_a")
    server.stop()
    with pytest.raises(urllib3.exceptions.MaxRetryError) as caught:
        tasks_api.cancel_task("agent_a", "task_x")
    assert isinstance(caught.value.reason, urllib3.exceptions.NewConnectionError)
    with pytest.raises(urllib3.exceptions.NewConnectionError):  # retries=False: unwrapped
        TasksApi(_client(server, retries=False)).cancel_task("agent_a", "task_x")
    with pytest.raises(urllib.error.URLError) as cloud_caught:
        cloud_client.a2a.cancel_task("agent_a", "a2a_x")
    assert isinstance(cloud_caught.value.reason, ConnectionRefusedError)
    assert server.requests == []  # nothing reached the server: safe to retry

    server.start()  # same port again
    assert tasks_api.cancel_task("agent_a", "task_x").data.status is TaskStatus.CANCELED


# --- Cloud A2A --------------------------------------------------------------------------------


def _seed_a2a(server: BeeOSStandIn) -> None:
    for i, (target, caller, state) in enumerate(
        [
            ("agent_a", "agent_b", "TASK_STATE_WORKING"),
            ("agent_a", "agent_c", "input-required"),
            ("agent_b", "agent_a", "TASK_STATE_SUBMITTED"),
            ("agent_a", "agent_b", "TASK_STATE_COMPLETED"),
        ]
    ):
        stamp = (T0 + dt.timedelta(minutes=i)).strftime("%Y-%m-%dT%H:%M:%S.000Z")
        server.add_a2a_task(
            task_id=f"a2a_{i}",
            agent_id=target,
            caller_agent_id=caller,
            state=state,
            created_at=stamp,
            history=[
                {"messageId": f"m{i}-{n}", "role": "ROLE_USER", "parts": [{"text": f"turn {n}"}]}
                for n in range(3)
            ],
        )


def test_a2a_list_and_get(server, cloud_client):
    _seed_a2a(server)
    first = cloud_client.a2a.list_tasks("agent_a", {"limit": 2})
    assert [t["id"] for t in first["tasks"]] == ["a2a_3", "a2a_2"]
    assert (first["total"], first["has_more"]) == (4, True)
    second = cloud_client.a2a.list_tasks("agent_a", {"limit": 2, "cursor": first["next_cursor"]})
    assert [t["id"] for t in second["tasks"]] == ["a2a_1", "a2a_0"]
    assert (second["has_more"], second["next_cursor"]) == (False, "")

    received = cloud_client.a2a.list_tasks(
        "agent_a", {"direction": "received", "agent_id": "agent_b"}
    )
    assert [t["id"] for t in received["tasks"]] == ["a2a_3", "a2a_0"]
    sent = cloud_client.a2a.list_tasks("agent_a", {"direction": "sent"})
    assert [t["id"] for t in sent["tasks"]] == ["a2a_2"]
    with pytest.raises(cloud.APIError) as caught:
        cloud_client.a2a.list_tasks("agent_a", {"direction": "sideways"})
    assert (caught.value.status, caught.value.body["code"]) == (400, "invalid_request")

    view = cloud_client.a2a.get_task("agent_a", "a2a_1", {"history_length": 2})
    assert view["status"]["state"] == "input-required"
    assert [m["messageId"] for m in view["history"]] == ["m1-1", "m1-2"]
    assert server.requests[-1].path == "/v1/a2a/agent_a/tasks/a2a_1"
    assert server.requests[-1].query == {"history_length": ["2"]}
    with pytest.raises(cloud.APIError) as caught:
        cloud_client.a2a.get_task("agent_a", "a2a_missing")
    assert (caught.value.status, caught.value.body["code"]) == (404, "task_not_found")


def test_a2a_cancel_and_not_cancelable(server, cloud_client):
    _seed_a2a(server)
    view = cloud_client.a2a.cancel_task("agent_a", "a2a_0")
    assert view["status"]["state"] == "TASK_STATE_CANCELED"  # keeps the enum spelling
    assert "completed_at" in view
    assert server.a2a_task("a2a_0")["status"]["state"] == "TASK_STATE_CANCELED"
    assert cloud_client.a2a.cancel_task("agent_a", "a2a_1")["status"]["state"] == "canceled"

    # REST: terminal task -> APIError 409 (stand-in choice; the reference only says
    # "default: ErrorResponse"), A2A code mirrored in body["data"] ErrorInfo.
    with pytest.raises(cloud.APIError) as caught:
        cloud_client.a2a.cancel_task("agent_a", "a2a_3")
    assert caught.value.status == 409
    body = caught.value.body
    assert body["code"] == "task_not_cancelable"
    assert body["data"][0]["reason"] == "TASK_NOT_CANCELABLE"
    assert body["data"][0]["metadata"]["code"] == "-32002"
    assert isinstance(caught.value.__cause__, urllib.error.HTTPError)

    # JSON-RPC (the documented -32002 surface): HTTP 200, no exception, error in the body.
    answer = cloud_client.a2a.invoke(
        "agent_a",
        {"jsonrpc": "2.0", "id": "c-1", "method": "CancelTask", "params": {"id": "a2a_3"}},
    )
    assert answer["id"] == "c-1" and "result" not in answer
    assert answer["error"]["code"] == -32002
    missing = cloud_client.a2a.invoke(
        "agent_a", {"jsonrpc": "2.0", "id": 2, "method": "tasks/cancel", "params": {"id": "nope"}}
    )
    assert missing["error"]["code"] == -32001
    assert server.a2a_task("a2a_3")["status"]["state"] == "TASK_STATE_COMPLETED"
    assert [e.object_id for e in server.effects_of("a2a.cancel")] == ["a2a_0", "a2a_1"]


def test_a2a_faults(server, cloud_client):
    _seed_a2a(server)
    server.rate_limit("/v1/a2a/*/cancel", retry_after=3)
    with pytest.raises(cloud.APIError) as caught:
        cloud_client.a2a.cancel_task("agent_a", "a2a_0")
    assert (caught.value.status, caught.value.body["code"]) == (429, "rate_limited")
    assert caught.value.__cause__.headers["Retry-After"] == "3"  # only via the cause

    server.fail("/v1/a2a/*/cancel", 500, "oops", content_type="text/plain")
    with pytest.raises(cloud.APIError) as caught:
        cloud_client.a2a.cancel_task("agent_a", "a2a_0")
    assert caught.value.body["code"] == "invalid_response"  # the SDK's own marker
    assert caught.value.body["reason"] == "non_json_error"

    slow = cloud.BeeOSClient(server.cloud_url, API_KEY, timeout=0.15)
    server.delay("/v1/a2a/*/cancel", 0.5)
    with pytest.raises(TimeoutError):  # after dispatch: a bare TimeoutError, no URLError
        slow.a2a.cancel_task("agent_a", "a2a_0")
    server.drop_connection("/v1/a2a/*/cancel")
    with pytest.raises(http.client.RemoteDisconnected):
        cloud_client.a2a.cancel_task("agent_a", "a2a_1")
    assert server.wait_for(lambda: len(server.effects_of("a2a.cancel")) == 2)
    assert len(server.requests_to("POST", "/v1/a2a/*/cancel")) == 4
    assert server.a2a_task("a2a_0")["status"]["state"] == "TASK_STATE_CANCELED"
    assert server.a2a_task("a2a_1")["status"]["state"] == "canceled"


# --- the stand-in guards the contract ----------------------------------------------------------


def test_seeding_rejects_payloads_outside_the_contract():
    standin = BeeOSStandIn()  # never started: seeding is plain Python
    with pytest.raises(ValidationError):
        standin.add_task(status="cancelled")  # British spelling is not an OpenAPI status
    with pytest.raises(ContractError):
        standin.add_operation("op-not-a-uuid")  # format: uuid (the SDK would accept it)
    with pytest.raises(ContractError):
        standin.add_operation(surprise="field")  # additionalProperties: false
    with pytest.raises(ValidationError):
        standin.add_operation(status="canceled")  # operations spell it "cancelled"
    with pytest.raises(ContractError):
        standin.add_a2a_task(task_id="a2a_bad", contextId=None)
    loose = BeeOSStandIn(strict=False)
    assert loose.add_operation("op-demo-id").id == "op-demo-id"


def test_requests_are_recorded_with_time_and_headers(server, tasks_api):
    server.add_task("task_rec", agent_id="agent_a", status="running")
    before = time.time()
    tasks_api.get_task("agent_a", "task_rec", _headers={"X-Trace": "abc"})
    (request,) = server.requests
    assert (request.method, request.path, request.query, request.body) == (
        "GET",
        "/api/v1/agents/agent_a/tasks/task_rec",
        {},
        b"",
    )
    assert request.header("x-trace") == "abc"
    assert request.header("User-Agent") == "OpenAPI-Generator/0.8.0/python"
    assert before <= request.time <= time.time()
