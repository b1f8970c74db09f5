"""A local stand-in for the BeeOS OpenAPI platform and the Cloud A2A task API.

Pure standard library HTTP (``ThreadingHTTPServer`` in a daemon thread) on 127.0.0.1.
State lives in memory; every payload it serves is built from the official SDKs' types
(``beeos_sdk`` pydantic models, ``beeos_cloud_sdk`` TypedDicts) and read back with them
before it is sent, so a contract drift in the SDKs breaks the tests that use it.

Surfaces (paths exactly as in ``beeos-platform-v1.yaml`` and the Cloud reference):

* OpenAPI (``Authorization: Bearer <api_key>``): ``GET /api/v1/tasks``,
  ``GET /api/v1/agents/{agentId}/tasks``, ``GET .../tasks/{taskId}``,
  ``GET .../tasks/{taskId}/messages``, ``POST .../tasks/{taskId}/cancel``,
  ``GET /api/v1/instances/{instanceId}/operations``, ``GET .../operations/{operationId}``,
  ``GET .../operations/{operationId}/events`` (SSE), ``POST .../operations/{operationId}/cancel``.
* Cloud (``Authorization: Bearer <cloud_api_key>``, base URL :attr:`cloud_url` = ``/v1``):
  ``GET /v1/a2a/{agentId}/tasks``, ``GET /v1/a2a/{agentId}/tasks/{taskId}``,
  ``POST /v1/a2a/{agentId}/tasks/{taskId}/cancel`` and JSON-RPC ``POST /v1/a2a/{agentId}``
  (``GetTask`` / ``tasks/get``, ``CancelTask`` / ``tasks/cancel``).
"""

from __future__ import annotations

import base64
import contextlib
import copy
import datetime as dt
import json
import re
import socket
import threading
import time
import traceback
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self
from urllib.parse import parse_qs, unquote, urlsplit

import beeos_cloud_sdk as cloud
from beeos_sdk.models import (
    CancelTaskRequest,
    Error,
    ErrorResponse,
    ListMessagesResponse,
    ListMessagesResponseAllOfData,
    ListTasksResponse,
    ListTasksResponseAllOfData,
    MessageDTO,
    MessageEnvelope,
    RuntimeOperationEventEnvelope,
    RuntimeOperationSnapshot,
    ServiceOperationCancelAccepted,
    ServiceOperationCancelConflict,
    ServiceOperationCursorConflict,
    ServiceOperationsListResponse,
    TaskResponse,
    TaskResponseAllOfData,
    TaskSummary,
)
from pydantic import ValidationError

from . import push
from .contract import (
    UTC,
    check_typed,
    cloud_typed,
    dumps,
    iso_millis,
    roundtrip,
    sdk_model,
    wire,
)
from .faults import DELAY, DROP, RESPOND, Effect, Fault, FaultBook, RecordedRequest

# --- vocabularies -------------------------------------------------------------------

TERMINAL_TASK_STATUSES = frozenset({"completed", "failed", "canceled", "timeout", "rejected"})
DELTA_MESSAGE_TYPES = frozenset({"agent_reply_delta", "agent_thought_chunk", "agent_message_chunk"})
TERMINAL_OPERATION_STATUSES = frozenset(
    {"succeeded", "failed", "cancelled", "expired", "outcome_unknown", "projection_blocked"}
)
CANCELLABLE_OPERATION_STATUSES = frozenset({"queued", "running"})
EFFECT_STATE_BY_STATUS = {
    "queued": "queued",
    "running": "running",
    "runtime_committed": "committed",
    "projection_pending": "committed",
    "projection_blocked": "committed",
    "succeeded": "committed",
    "failed": "failed",
    "cancelled": "cancelled",
    "expired": "expired",
    "outcome_unknown": "outcome_unknown",
}
CAPABILITY_BY_METHOD_PREFIX = {
    "agent": "agents.lifecycle",
    "skills": "skills",
    "models": "models",
    "cron": "cron",
    "mcp": "mcp",
    "session": "conversation.control",
}
A2A_TERMINAL_STATES = frozenset(
    {
        "completed",
        "failed",
        "canceled",
        "cancelled",
        "rejected",
        "TASK_STATE_COMPLETED",
        "TASK_STATE_FAILED",
        "TASK_STATE_CANCELED",
        "TASK_STATE_REJECTED",
    }
)
# A2A JSON-RPC error codes (Cloud A2A reference).
A2A_TASK_NOT_FOUND = -32001
A2A_TASK_NOT_CANCELABLE = -32002
ERROR_TYPE_BY_STATUS = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    409: "conflict_error",
    422: "validation_error",
    429: "rate_limit_error",
}
# Python-friendly spellings accepted by add_operation / set_operation_status.
_OP_ALIASES = {
    "effect_state": "effectState",
    "created_at": "createdAt",
    "updated_at": "updatedAt",
    "cancel_request": "cancelRequest",
    "instance_id": "instanceId",
}
_UNSET: Any = object()


def _utcnow() -> dt.datetime:
    return dt.datetime.now(UTC)


def _encode_cursor(key: tuple[Any, ...]) -> str:
    return base64.urlsafe_b64encode(json.dumps(list(key)).encode()).decode().rstrip("=")


def _decode_cursor(cursor: str) -> tuple[Any, ...]:
    raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
    key = json.loads(raw)
    if not isinstance(key, list) or len(key) != 2:
        raise ValueError("bad cursor")
    return tuple(key)


def _ts(value: Any) -> float:
    if isinstance(value, dt.datetime):
        return value.timestamp()
    if isinstance(value, str) and value:
        return dt.datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    return 0.0


# --- internal records -----------------------------------------------------------


@dataclass
class _TaskRecord:
    data: TaskResponseAllOfData
    seq: int
    instance_id: str | None = None
    messages: list[MessageDTO] = field(default_factory=list)


@dataclass
class _OperationRecord:
    snapshot: RuntimeOperationSnapshot
    seq: int
    events: list[RuntimeOperationEventEnvelope] = field(default_factory=list)


@dataclass
class _A2ARecord:
    view: dict[str, Any]
    seq: int


@dataclass
class _Response:
    status: int
    body: bytes = b""
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)
    frames: list[bytes] | None = None  # SSE: written one by one, then the connection closes


class _Reject(Exception):
    def __init__(self, response: _Response) -> None:
        super().__init__(response.status)
        self.response = response


@dataclass
class _Ctx:
    request: RecordedRequest
    request_id: str
    params: dict[str, str] = field(default_factory=dict)

    def q(self, name: str) -> str | None:
        values = self.request.query.get(name)
        return values[-1] if values else None


class BeeOSStandIn:
    """In-memory BeeOS OpenAPI + Cloud A2A server for tests.

    Use as a context manager (``with BeeOSStandIn() as server:``) or ``start()`` /
    ``stop()``. ``stop()`` closes the listening socket and every open connection, so a
    following SDK call fails to connect ("before dispatch"); ``start()`` again re-binds
    the same port.
    """

    def __init__(
        self,
        api_key: str = "oag_standin_key",
        *,
        cloud_api_key: str | None = None,
        principal: str = "user:standin-owner",
        strict: bool = True,
        cancel_settle_seconds: float | None = 0.0,
        clock: Callable[[], dt.datetime] = _utcnow,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        """``strict`` adds the contract checks the SDK models skip (uuid formats, closed
        operation schemas, consts). ``cancel_settle_seconds``: after an accepted operation
        cancel, the operation becomes ``cancelled`` at once (0), after that many seconds,
        or only when :meth:`settle_cancel` is called (None).
        """
        self.api_key = api_key
        self.cloud_api_key = cloud_api_key if cloud_api_key is not None else api_key
        self.principal = principal
        self.strict = strict
        self.cancel_settle_seconds = cancel_settle_seconds
        self.clock = clock
        self.host = host
        self._port = port
        self._lock = threading.RLock()
        self._faults = FaultBook()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()
        self._connections: set[socket.socket] = set()
        self._seq = 0
        self.requests: list[RecordedRequest] = []
        # Requests received per route (handler name without "_", e.g. "get_task"), 429s and
        # injected faults included: what a client's pass cost, counted on the server side.
        self.calls: Counter[str] = Counter()
        self.effects: list[Effect] = []
        self.errors: list[str] = []  # tracebacks of handler crashes (a stand-in bug)
        self._agents: set[str] = set()
        self._instances: set[str] = set()
        self._tasks: dict[str, _TaskRecord] = {}
        self._operations: dict[str, _OperationRecord] = {}
        self._idempotency: dict[str, tuple[str, str, _Response]] = {}
        self._a2a: dict[str, _A2ARecord] = {}
        self._cards: dict[str, dict[str, Any]] = {}  # agent -> its card settings (set_agent_card)
        self._push: dict[str, list[dict[str, Any]]] = {}  # A2A task -> push configs (push.py)
        self._push_unsupported: set[str] = set()  # agents answering -32003

    # --- lifecycle -------------------------------------------------------------------

    def start(self) -> Self:
        if self._httpd is not None:
            return self
        handler = type("StandInHandler", (_Handler,), {"standin": self})
        httpd = ThreadingHTTPServer((self.host, self._port), handler)
        httpd.daemon_threads = True
        self._port = httpd.server_address[1]
        self._stopping.clear()
        self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        self._stopping.set()
        httpd.shutdown()
        httpd.server_close()
        with self._lock:
            connections, self._connections = self._connections, set()
        for conn in connections:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def running(self) -> bool:
        return self._httpd is not None

    @property
    def port(self) -> int:
        return self._port

    @property
    def url(self) -> str:
        """Base URL of the OpenAPI surface: ``Configuration(host=server.url)``."""
        return f"http://{self.host}:{self._port}"

    @property
    def cloud_url(self) -> str:
        """Base URL for ``beeos_cloud_sdk.BeeOSClient`` (the Cloud serves under ``/v1``)."""
        return self.url + "/v1"

    def now(self) -> dt.datetime:
        return self.clock()

    # --- fault injection -------------------------------------------------------------

    def rate_limit(
        self,
        pattern: str | re.Pattern[str],
        *,
        times: int | None = 1,
        retry_after: int | str = 1,
        method: str | None = None,
        body: Any = None,
    ) -> Fault:
        """Answer 429 with ``Retry-After`` the next ``times`` matching requests."""
        return self._faults.add(
            Fault(
                RESPOND,
                pattern,
                method,
                times,
                status=429,
                body=body,
                headers={"Retry-After": str(retry_after)},
            )
        )

    def fail(
        self,
        pattern: str | re.Pattern[str],
        status: int,
        body: Any = None,
        *,
        times: int | None = 1,
        method: str | None = None,
        headers: dict[str, str] | None = None,
        content_type: str = "application/json",
    ) -> Fault:
        """Answer ``status`` with ``body`` (dict/list -> JSON, str/bytes as is; None -> the
        surface's standard error body) instead of handling the request. No state changes."""
        return self._faults.add(
            Fault(
                RESPOND,
                pattern,
                method,
                times,
                status=status,
                body=body,
                headers=dict(headers or {}),
                content_type=content_type,
            )
        )

    def delay(
        self,
        pattern: str | re.Pattern[str],
        seconds: float,
        *,
        times: int | None = 1,
        method: str | None = None,
    ) -> Fault:
        """Handle the request (its effect happens), then hold the answer ``seconds``:
        a client read timeout shorter than that fails *after dispatch*."""
        return self._faults.add(Fault(DELAY, pattern, method, times, seconds=seconds))

    def drop_connection(
        self,
        pattern: str | re.Pattern[str],
        *,
        times: int | None = 1,
        method: str | None = None,
        apply_effect: bool = True,
    ) -> Fault:
        """Read the request, then close the connection without answering ("connection
        lost after dispatch"). ``apply_effect``: handle the request first (its state change
        happens, only the answer is lost) or not at all."""
        return self._faults.add(Fault(DROP, pattern, method, times, apply_effect=apply_effect))

    def a2a_error(
        self,
        code: int,
        reason: str,
        message: str = "",
        *,
        status: int = 200,
        jsonrpc: bool = False,
        pattern: str | re.Pattern[str] = "/v1/a2a/*/tasks/*/cancel",
        times: int | None = 1,
    ) -> Fault:
        """Answer the next A2A cancel with A2A JSON-RPC error ``code`` (Cloud A2A reference:
        ``error.data`` holds one ErrorInfo whose ``reason`` names it and whose ``metadata``
        repeats code and message). ``jsonrpc``: the RuntimeMethodResponse envelope
        (``{"jsonrpc": "2.0", "error": {...}}``, errors on HTTP 200 as documented); else a
        Cloud ``ErrorResponse`` on ``status`` carrying the ErrorInfo in ``data``, as the
        stand-in's own 404 / -32002 answers do. Nothing changes state."""
        message = message or f"A2A error {code} (injected)"
        info = self._error_info(code, reason, message)
        if jsonrpc:
            body: dict[str, Any] = {
                "jsonrpc": "2.0",
                "id": None,
                "error": {"code": code, "message": message, "data": info},
            }
            body = cloud_typed(cloud.RuntimeMethodResponse, body)
        else:
            body = {
                "code": reason.lower(),
                "message": message,
                "request_id": f"req_{uuid.uuid4().hex[:16]}",
                "data": info,
            }
            body = cloud_typed(cloud.ErrorResponse, body, extra_ok=True)
        return self.fail(pattern, status, body, times=times, method="POST")

    def clear_faults(self) -> None:
        self._faults.clear()

    # --- records ---------------------------------------------------------------------

    def requests_to(
        self, method: str | None = None, pattern: str | re.Pattern[str] | None = None
    ) -> list[RecordedRequest]:
        """Recorded requests filtered by method and path pattern (same rules as faults)."""
        probe = Fault(RESPOND, pattern or "*", method)
        with self._lock:
            return [r for r in self.requests if probe.matches(r.method, r.path)]

    def effects_of(self, kind: str | None = None, object_id: str | None = None) -> list[Effect]:
        with self._lock:
            return [
                e
                for e in self.effects
                if kind in (None, e.kind) and object_id in (None, e.object_id)
            ]

    def wait_for(self, predicate: Callable[[], bool], timeout: float = 2.0) -> bool:
        """Poll ``predicate`` (e.g. ``lambda: server.effects_of("task.cancel")``) until it
        holds: a handler thread may still be working when the client has given up."""
        deadline = time.monotonic() + timeout
        while not predicate():
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.01)
        return True

    def clear_requests(self) -> None:
        with self._lock:
            self.requests.clear()
            self.calls.clear()

    def call_count(self) -> int:
        """Requests received since the last :meth:`clear_requests`."""
        with self._lock:
            return sum(self.calls.values())

    def _next_seq(self) -> int:
        self._seq += 1
        return self._seq

    def _effect(self, kind: str, object_id: str, **detail: Any) -> None:
        self.effects.append(Effect(kind, object_id, detail))

    # --- seeding and inspection: OpenAPI tasks ------------------------------------------

    def add_agent(self, agent_id: str) -> None:
        """Make an agent known without tasks (listAgentTasks answers 404 for unknown ones)."""
        with self._lock:
            self._agents.add(agent_id)

    def add_task(
        self,
        task_id: str | None = None,
        *,
        agent_id: str = "agent_standin",
        status: str = "queued",
        instance_id: str | None = None,
        **fields: Any,
    ) -> TaskResponseAllOfData:
        """Seed an OpenAPI task (fields as in ``TaskResponse.data``: caller_id, result,
        error, metadata, created_at, started_at, completed_at, deadline_at, truncated).
        ``instance_id`` is kept beside it for ``listUserTasks?instance_id=``."""
        now = self.now()
        payload: dict[str, Any] = {
            "task_id": task_id or f"task_{uuid.uuid4().hex[:20]}",
            "agent_id": agent_id,
            "status": status,
            "created_at": now,
            **fields,
        }
        if status in TERMINAL_TASK_STATUSES:
            payload.setdefault("completed_at", now)
        model = sdk_model(TaskResponseAllOfData, payload, strict=self.strict)
        with self._lock:
            if model.task_id in self._tasks:
                raise ValueError(f"task {model.task_id!r} already seeded")
            self._tasks[model.task_id] = _TaskRecord(model, self._next_seq(), instance_id)
            self._agents.add(model.agent_id)
        return model.model_copy(deep=True)

    def set_task_status(self, task_id: str, status: str, **fields: Any) -> TaskResponseAllOfData:
        """Move a seeded task to ``status`` (what the platform would do on its own)."""
        with self._lock:
            record = self._task_record(task_id)
            payload = {**wire(record.data), "status": status, **fields}
            if status in TERMINAL_TASK_STATUSES:
                payload.setdefault("completed_at", self.now())
            record.data = sdk_model(TaskResponseAllOfData, payload, strict=self.strict)
            return record.data.model_copy(deep=True)

    def task(self, task_id: str) -> TaskResponseAllOfData:
        with self._lock:
            return self._task_record(task_id).data.model_copy(deep=True)

    def add_message(
        self,
        task_id: str,
        *,
        type: str = "agent_reply",  # noqa: A002 - the wire field name
        body: str | None = None,
        offset: int | None = None,
        message_id: str | None = None,
        **fields: Any,
    ) -> MessageDTO:
        """Append a message (``MessageDTO`` fields: publisher_id, in_reply_to, payload,
        state, stop_reason, parts, created_at, updated_at) to a task's log. Offsets must
        grow strictly; holes are allowed (the contract says offsets are not contiguous)."""
        with self._lock:
            record = self._task_record(task_id)
            last = record.messages[-1].offset if record.messages else 0
            offset = last + 1 if offset is None else offset
            if offset <= last:
                raise ValueError(f"offset {offset} must be greater than {last}")
            payload: dict[str, Any] = {
                "message_id": message_id or str(uuid.uuid4()),
                "offset": offset,
                "type": type,
                "created_at": self.now(),
                **fields,
            }
            if body is not None:
                payload["body"] = body
            message = sdk_model(MessageDTO, payload, strict=self.strict)
            record.messages.append(message)
            return message.model_copy(deep=True)

    def add_envelope(
        self, task_id: str, envelope: MessageEnvelope | dict[str, Any], *, offset: int | None = None
    ) -> MessageDTO:
        """Append a v3 ``MessageEnvelope``; the task messages endpoint serves it as the
        ``MessageDTO`` the contract lists there (id->message_id, sender->publisher_id,
        reply_to->in_reply_to, content->payload)."""
        env = wire(sdk_model(MessageEnvelope, envelope, strict=self.strict))
        mapped = {
            "publisher_id": env.get("sender"),
            "in_reply_to": env.get("reply_to"),
            "payload": env.get("content"),
            "state": env.get("state"),
            "stop_reason": env.get("stop_reason"),
            "parts": env.get("parts"),
            "created_at": env.get("created_at"),
            "updated_at": env.get("updated_at"),
        }
        return self.add_message(
            task_id,
            type=env["type"],
            body=env["body"],
            offset=offset,
            message_id=env["id"],
            **{k: v for k, v in mapped.items() if v is not None},
        )

    def messages(self, task_id: str) -> list[MessageDTO]:
        with self._lock:
            return [m.model_copy(deep=True) for m in self._task_record(task_id).messages]

    def _task_record(self, task_id: str) -> _TaskRecord:
        try:
            return self._tasks[task_id]
        except KeyError:
            raise KeyError(f"no task {task_id!r}") from None

    # --- seeding and inspection: runtime operations --------------------------------------

    def add_instance(self, instance_id: str) -> None:
        """Make an instance known without operations (unknown instances answer 404)."""
        with self._lock:
            self._instances.add(instance_id)

    def add_operation(
        self,
        operation_id: str | None = None,
        *,
        instance_id: str = "inst_standin",
        method: str = "session/set_model",
        status: str = "running",
        **fields: Any,
    ) -> RuntimeOperationSnapshot:
        """Seed a ``RuntimeOperationSnapshot``. Fields use wire names (``target``,
        ``capability``, ``progress``, ``projection``, ``result``, ``error``, ``cancelRequest``
        …) or the snake_case ``effect_state``, ``created_at``, ``updated_at``,
        ``cancel_request``. Defaults: capability from the method, a target matching it,
        ``effectState`` and ``terminal`` from the status."""
        now = self.now()
        capability = fields.pop("capability", None) or CAPABILITY_BY_METHOD_PREFIX.get(
            method.split("/", 1)[0], "conversation.control"
        )
        payload: dict[str, Any] = {
            "id": operation_id or str(uuid.uuid4()),
            "instanceId": instance_id,
            "target": self._default_target(capability),
            "method": method,
            "capability": capability,
            "transport": "service",
            "sequence": "0",
            "createdAt": now,
            "updatedAt": now,
            "status": status,
            "effectState": EFFECT_STATE_BY_STATUS.get(status, "running"),
            "terminal": status in TERMINAL_OPERATION_STATUSES,
        }
        payload.update({_OP_ALIASES.get(k, k): v for k, v in fields.items()})
        snapshot = sdk_model(RuntimeOperationSnapshot, payload, strict=self.strict)
        with self._lock:
            if snapshot.id in self._operations:
                raise ValueError(f"operation {snapshot.id!r} already seeded")
            self._operations[snapshot.id] = _OperationRecord(snapshot, self._next_seq())
            self._instances.add(snapshot.instance_id)
        return snapshot.model_copy(deep=True)

    def add_operations(
        self,
        count: int,
        *,
        instance_id: str = "inst_standin",
        method: str = "session/set_model",
        status: str = "running",
        created_at: dt.datetime,
        step: dt.timedelta = dt.timedelta(seconds=1),
    ) -> list[RuntimeOperationSnapshot]:
        """Seed ``count`` operations alike but for their id and times (``created_at``,
        then ``step`` apart), for scale tests: the first is built and checked like
        :meth:`add_operation`, the others are copies of it (the same contract shape)."""
        first = self.add_operation(
            instance_id=instance_id, method=method, status=status, created_at=created_at
        )
        copies = [first]
        with self._lock:
            template = self._operations[first.id].snapshot
            for i in range(1, count):
                stamp = created_at + i * step
                snapshot = template.model_copy(
                    update={"id": str(uuid.uuid4()), "created_at": stamp, "updated_at": stamp}
                )
                self._operations[snapshot.id] = _OperationRecord(snapshot, self._next_seq())
                copies.append(snapshot)
        return copies

    @staticmethod
    def _default_target(capability: str) -> dict[str, Any]:
        if capability == "conversation.control":
            return {
                "scope": "conversation",
                "platformAgentId": str(uuid.uuid4()),
                "conversationId": str(uuid.uuid4()),
            }
        if capability in ("agents.lifecycle", "skills", "mcp"):
            return {"scope": "agent", "platformAgentId": str(uuid.uuid4())}
        return {"scope": "instance"}

    def set_operation_status(
        self, operation_id: str, status: str, **fields: Any
    ) -> RuntimeOperationSnapshot:
        """Move an operation to ``status`` (effectState / terminal follow unless given)."""
        changes: dict[str, Any] = {
            "status": status,
            "effectState": EFFECT_STATE_BY_STATUS.get(status, "running"),
            "terminal": status in TERMINAL_OPERATION_STATUSES,
            "updatedAt": self.now(),
        }
        changes.update({_OP_ALIASES.get(k, k): v for k, v in fields.items()})
        with self._lock:
            return self._update_operation(operation_id, **changes).model_copy(deep=True)

    def operation(self, operation_id: str) -> RuntimeOperationSnapshot:
        with self._lock:
            return self._operation_record(operation_id).snapshot.model_copy(deep=True)

    def add_event(
        self,
        operation_id: str,
        type: str,  # noqa: A002 - the wire field name
        *,
        payload: dict[str, Any] | None = None,
        outcome: str | None = None,
        result: Any = _UNSET,
        error: dict[str, Any] | None = None,
        revision: str | None = None,
        recorded_at: dt.datetime | None = None,
    ) -> RuntimeOperationEventEnvelope:
        """Append a ``RuntimeOperationEventEnvelope``; its ``id`` / ``event.sequence`` are
        the next public sequence, and the snapshot's ``sequence`` / ``cursor`` follow."""
        with self._lock:
            record = self._operation_record(operation_id)
            number = int(record.events[-1].id) + 1 if record.events else 1
            recorded = recorded_at or self.now()
            event: dict[str, Any] = {"type": type, "sequence": str(number), "recordedAt": recorded}
            for key, value in (
                ("payload", payload),
                ("outcome", outcome),
                ("error", error),
                ("revision", revision),
            ):
                if value is not None:
                    event[key] = value
            if result is not _UNSET:
                event["result"] = result
            envelope = sdk_model(
                RuntimeOperationEventEnvelope,
                {
                    "id": str(number),
                    "operationId": record.snapshot.id,
                    "method": record.snapshot.method.value,
                    "event": event,
                },
                strict=self.strict,
            )
            record.events.append(envelope)
            self._update_operation(
                operation_id, sequence=str(number), cursor=str(number), updatedAt=recorded
            )
            return envelope.model_copy(deep=True)

    def events(self, operation_id: str) -> list[RuntimeOperationEventEnvelope]:
        with self._lock:
            return [e.model_copy(deep=True) for e in self._operation_record(operation_id).events]

    def settle_cancel(self, operation_id: str) -> RuntimeOperationSnapshot:
        """Finish a requested cancel: status/effectState ``cancelled``, terminal, plus a
        ``runtime_rpc_response`` event with outcome ``cancelled``."""
        with self._lock:
            record = self._operation_record(operation_id)
            if record.snapshot.terminal:
                return record.snapshot.model_copy(deep=True)
            error = {
                "code": "OPERATION_CANCELLED",
                "message": "operation cancelled on request",
                "operationId": record.snapshot.id,
                "effectState": "cancelled",
                "retryMode": "none",
            }
            self.add_event(operation_id, "runtime_rpc_response", outcome="cancelled", error=error)
            self._update_operation(
                operation_id,
                status="cancelled",
                effectState="cancelled",
                terminal=True,
                error=error,
                updatedAt=self.now(),
            )
            self._effect("operation.cancelled", operation_id)
            return record.snapshot.model_copy(deep=True)

    def _operation_record(self, operation_id: str) -> _OperationRecord:
        try:
            return self._operations[operation_id]
        except KeyError:
            raise KeyError(f"no operation {operation_id!r}") from None

    def _update_operation(self, operation_id: str, **changes: Any) -> RuntimeOperationSnapshot:
        record = self._operation_record(operation_id)
        payload = {**wire(record.snapshot), **changes}
        record.snapshot = sdk_model(RuntimeOperationSnapshot, payload, strict=self.strict)
        return record.snapshot

    # --- seeding and inspection: Cloud A2A tasks ------------------------------------------

    def add_a2a_task(
        self,
        view: dict[str, Any] | None = None,
        *,
        task_id: str | None = None,
        agent_id: str = "agent_standin",
        caller_agent_id: str = "agent_caller",
        state: str = "TASK_STATE_WORKING",
        **fields: Any,
    ) -> dict[str, Any]:
        """Seed an ``a2aTaskView`` (checked against the cloud SDK TypedDict). Pass a whole
        view, or let the defaults build one: ``agent_id`` is the target agent."""
        if view is None:
            now = iso_millis(self.now())
            view = {
                "id": task_id or f"a2a_{uuid.uuid4().hex[:24]}",
                "contextId": f"ctx_{uuid.uuid4().hex[:16]}",
                "status": {"state": state, "timestamp": now},
                "caller_principal_id": f"prn_{caller_agent_id}",
                "caller_agent_id": caller_agent_id,
                "caller_owner_id": "owner_caller",
                "target_principal_id": f"prn_{agent_id}",
                "target_agent_id": agent_id,
                "target_owner_id": "owner_target",
                "created_at": now,
                "updated_at": now,
            }
        view = {**copy.deepcopy(view), **fields}
        view = cloud_typed(cloud.a2aTaskView, view)
        with self._lock:
            if view["id"] in self._a2a:
                raise ValueError(f"A2A task {view['id']!r} already seeded")
            self._a2a[view["id"]] = _A2ARecord(view, self._next_seq())
        return copy.deepcopy(view)

    def set_a2a_state(self, task_id: str, state: str, **fields: Any) -> dict[str, Any]:
        with self._lock:
            record = self._a2a_record(task_id)
            now = iso_millis(self.now())
            view = {**copy.deepcopy(record.view), **fields}
            view["status"] = {"state": state, "timestamp": now}
            view["updated_at"] = now
            if state in A2A_TERMINAL_STATES:
                view.setdefault("completed_at", now)
            record.view = cloud_typed(cloud.a2aTaskView, view)
            return copy.deepcopy(record.view)

    def a2a_task(self, task_id: str) -> dict[str, Any]:
        with self._lock:
            return copy.deepcopy(self._a2a_record(task_id).view)

    def _a2a_record(self, task_id: str) -> _A2ARecord:
        try:
            return self._a2a[task_id]
        except KeyError:
            raise KeyError(f"no A2A task {task_id!r}") from None

    # --- A2A agent cards (seed 003) ------------------------------------------------------

    def set_agent_card(
        self,
        agent_id: str,
        *,
        shape: str = "1.0",
        legacy_only: bool = False,
        a2a_enabled: bool = True,
        configured: bool = True,
        **card: Any,
    ) -> None:
        """Publish ``agent_id``'s card. ``shape``: "1.0" (``supportedInterfaces``) or "0.3"
        (``url`` + ``protocolVersion``; a request with ``A2A-Version: 0.3`` gets it too).
        ``legacy_only``: an older Cloud, only ``.well-known/agent.json`` answers.
        ``a2a_enabled=False``: 403 ``a2a_disabled``. ``configured=False``: JSON-RPC -32007.
        ``card``: fields over the defaults (name, description, version, modes)."""
        base = {
            "name": f"Agent {agent_id}",
            "description": f"The stand-in's agent {agent_id}.",
            "version": "3",
            "defaultInputModes": ["text/plain"],
            "defaultOutputModes": ["text/plain", "application/json"],
        }
        with self._lock:
            self._cards[agent_id] = {
                "shape": shape,
                "legacy_only": legacy_only,
                "a2a_enabled": a2a_enabled,
                "configured": configured,
                "card": {**base, **card},
            }

    def _a2a_agent_card(self, ctx: _Ctx, *, legacy: bool = False) -> _Response:
        agent_id = ctx.params["agentId"]
        with self._lock:
            settings = copy.deepcopy(self._cards.get(agent_id))
        if settings is None or (settings["legacy_only"] and not legacy):
            return self._cloud_error(ctx, 404, "not_found", f"no route {ctx.request.path}")
        if not settings["a2a_enabled"]:
            return self._cloud_error(ctx, 403, "a2a_disabled", "A2A is disabled for this agent")
        if not settings["configured"]:
            error = {"code": -32007, "message": "agent card not configured"}
            body = {"jsonrpc": "2.0", "id": None, "error": error}
            return self._json(200, cloud_typed(cloud.RuntimeMethodResponse, body))
        card = settings["card"]
        endpoint = f"{self.cloud_url}/a2a/{agent_id}"
        if settings["shape"] == "0.3" or ctx.request.header("A2A-Version") == "0.3":
            card = {**card, "url": endpoint, "protocolVersion": "0.3"}
        else:
            interface = {"url": endpoint, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}
            card = {**card, "supportedInterfaces": [interface]}
        return self._json(200, cloud_typed(cloud.A2AAgentCard, card))

    def _a2a_agent_card_legacy(self, ctx: _Ctx) -> _Response:
        return self._a2a_agent_card(ctx, legacy=True)

    # --- A2A push-notification configs (seed 003, tests/standin/push.py) -------------------

    def set_push_configs(self, task_id: str, configs: list[dict[str, Any]]) -> None:
        """The push configs of an A2A task (1.0 shape: ``{id, url, token?, authentication?:
        {scheme, credentials?}}``); listed by ``ListTaskPushNotificationConfigs`` & aliases."""
        with self._lock:
            self._push[task_id] = [push.seed_config(task_id, c) for c in configs]

    def set_push_supported(self, agent_id: str, supported: bool = True) -> None:
        """``supported=False``: the agent answers the push methods with -32003."""
        with self._lock:
            if supported:
                self._push_unsupported.discard(agent_id)
            else:
                self._push_unsupported.add(agent_id)

    # --- HTTP: dispatch ------------------------------------------------------------------

    _ROUTES: tuple[tuple[str, re.Pattern[str], str], ...] = tuple(
        (method, re.compile("^" + re.sub(r"\{(\w+)\}", r"(?P<\1>[^/]+)", path) + "$"), name)
        for method, path, name in (
            ("GET", "/api/v1/tasks", "_list_user_tasks"),
            ("GET", "/api/v1/agents/{agentId}/tasks", "_list_agent_tasks"),
            ("GET", "/api/v1/agents/{agentId}/tasks/{taskId}", "_get_task"),
            ("GET", "/api/v1/agents/{agentId}/tasks/{taskId}/messages", "_list_task_messages"),
            ("POST", "/api/v1/agents/{agentId}/tasks/{taskId}/cancel", "_cancel_task"),
            ("GET", "/api/v1/instances/{instanceId}/operations", "_list_operations"),
            ("GET", "/api/v1/instances/{instanceId}/operations/{operationId}", "_get_operation"),
            (
                "GET",
                "/api/v1/instances/{instanceId}/operations/{operationId}/events",
                "_stream_operation_events",
            ),
            (
                "POST",
                "/api/v1/instances/{instanceId}/operations/{operationId}/cancel",
                "_cancel_operation",
            ),
            ("POST", "/v1/a2a/{agentId}", "_a2a_invoke"),
            ("GET", "/v1/a2a/{agentId}/.well-known/agent-card.json", "_a2a_agent_card"),
            ("GET", "/v1/a2a/{agentId}/.well-known/agent.json", "_a2a_agent_card_legacy"),
            ("GET", "/v1/a2a/{agentId}/tasks", "_a2a_list"),
            ("GET", "/v1/a2a/{agentId}/tasks/{taskId}", "_a2a_get"),
            ("POST", "/v1/a2a/{agentId}/tasks/{taskId}/cancel", "_a2a_cancel"),
        )
    )

    def _record(self, request: RecordedRequest) -> None:
        route = next(
            (
                name[1:]
                for m, rx, name in self._ROUTES
                if m == request.method and rx.match(request.path)
            ),
            "unrouted",
        )
        with self._lock:
            self.requests.append(request)
            self.calls[route] += 1

    def _dispatch(self, request: RecordedRequest) -> _Response:
        ctx = _Ctx(request, f"req_{uuid.uuid4().hex[:16]}")
        cloud_surface = request.path.startswith("/v1/")
        try:
            response = self._route(ctx, cloud_surface)
        except _Reject as rejected:
            response = rejected.response
        except Exception:  # a stand-in bug: answer 500 and keep the traceback for the test
            self.errors.append(traceback.format_exc())
            response = self._error(ctx, cloud_surface, 500, "internal_error", "stand-in crashed")
        response.headers.setdefault("X-Request-Id", ctx.request_id)
        return response

    def _route(self, ctx: _Ctx, cloud_surface: bool) -> _Response:
        path, method = ctx.request.path, ctx.request.method
        found = [(m, rx.match(path), name) for m, rx, name in self._ROUTES]
        found = [(m, match, name) for m, match, name in found if match]
        if not found:
            return self._error(ctx, cloud_surface, 404, "not_found", f"no route {path}")
        self._authenticate(ctx, cloud_surface)
        for m, match, name in found:
            if m == method:
                ctx.params = {k: unquote(v) for k, v in match.groupdict().items()}
                return getattr(self, name)(ctx)
        return self._error(ctx, cloud_surface, 405, "method_not_allowed", f"{method} {path}")

    def _authenticate(self, ctx: _Ctx, cloud_surface: bool) -> None:
        expected = self.cloud_api_key if cloud_surface else self.api_key
        header = ctx.request.header("Authorization")
        if header is None or not header.startswith("Bearer "):
            code, message = "unauthorized", "missing or malformed Authorization header"
        elif not header[len("Bearer ") :].strip():
            code, message = "missing_token", "empty bearer token"
        elif header[len("Bearer ") :].strip() != expected:
            code, message = "invalid_token", "unknown API key"
        else:
            return
        response = self._error(ctx, cloud_surface, 401, code, message)
        response.headers["WWW-Authenticate"] = "Bearer"
        raise _Reject(response)

    # --- HTTP: bodies ----------------------------------------------------------------------

    @staticmethod
    def _json(status: int, body: Any, headers: dict[str, str] | None = None) -> _Response:
        return _Response(status, dumps(body), headers=dict(headers or {}))

    def _api_error(
        self,
        ctx: _Ctx,
        status: int,
        code: str,
        message: str,
        *,
        param: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> _Response:
        """The OpenAPI error envelope: ``ErrorResponse`` ``{success: false, error: {...}}``."""
        error = Error(
            type=ERROR_TYPE_BY_STATUS.get(status, "api_error"),
            code=code,
            message=message,
            request_id=ctx.request_id,
            param=param,
        )
        body = roundtrip(ErrorResponse, ErrorResponse(success=False, error=error))
        return self._json(status, body, headers)

    def _cloud_error(
        self,
        ctx: _Ctx,
        status: int,
        code: str,
        message: str,
        *,
        data: Any = None,
        headers: dict[str, str] | None = None,
    ) -> _Response:
        """The Cloud error body: flat ``ErrorResponse`` ``{code, message, request_id}``
        (``data`` is a stand-in extension, see ``_a2a_cancel``)."""
        body: dict[str, Any] = {"code": code, "message": message, "request_id": ctx.request_id}
        if data is not None:
            body["data"] = data
        return self._json(
            status, cloud_typed(cloud.ErrorResponse, body, extra_ok=data is not None), headers
        )

    def _error(
        self, ctx: _Ctx, cloud_surface: bool, status: int, code: str, message: str, **kw: Any
    ) -> _Response:
        if cloud_surface:
            return self._cloud_error(ctx, status, code, message, **kw)
        return self._api_error(ctx, status, code, message, **kw)

    def _canned(self, fault: Fault, request: RecordedRequest) -> _Response:
        """The answer of a RESPOND fault (429s and ``fail()``)."""
        headers = dict(fault.headers)
        headers.setdefault("X-Request-Id", f"req_{uuid.uuid4().hex[:16]}")
        if fault.body is None:
            ctx = _Ctx(request, headers["X-Request-Id"])
            code = {429: "rate_limited", 503: "agent_service_unavailable", 504: "service_timeout"}
            default = code.get(fault.status, "internal_error" if fault.status >= 500 else "error")
            message = "injected fault" if fault.status != 429 else "rate limited (injected)"
            response = self._error(
                ctx, request.path.startswith("/v1/"), fault.status, default, message
            )
            response.headers.update(headers)
            return response
        if isinstance(fault.body, bytes):
            raw = fault.body
        elif isinstance(fault.body, str):
            raw = fault.body.encode()
        else:
            raw = dumps(fault.body)
        return _Response(fault.status, raw, fault.content_type, headers)

    # --- HTTP: parameters -------------------------------------------------------------------

    def _bad_param(self, ctx: _Ctx, cloud_surface: bool, name: str, message: str) -> _Reject:
        if cloud_surface:
            return _Reject(self._cloud_error(ctx, 400, "invalid_request", f"{name}: {message}"))
        return _Reject(self._api_error(ctx, 400, "invalid_param", message, param=name))

    def _int_param(
        self,
        ctx: _Ctx,
        name: str,
        *,
        lo: int,
        hi: int | None,
        default: int | None,
        cloud_surface: bool = False,
    ) -> int | None:
        raw = ctx.q(name)
        if raw is None:
            return default
        try:
            value = int(raw)
        except ValueError:
            raise self._bad_param(ctx, cloud_surface, name, "must be an integer") from None
        if value < lo or (hi is not None and value > hi):
            raise self._bad_param(ctx, cloud_surface, name, f"must be in [{lo}, {hi}]")
        return value

    def _cursor(self, ctx: _Ctx, name: str, *, cloud_surface: bool = False) -> tuple | None:
        raw = ctx.q(name)
        if not raw:
            return None
        try:
            return _decode_cursor(raw)
        except ValueError:
            raise self._bad_param(ctx, cloud_surface, name, "unknown cursor") from None

    @staticmethod
    def _page(
        items: list[Any],
        key: Callable[[Any], tuple],
        after: tuple | None,
        limit: int,
        *,
        newest_first: bool,
    ) -> tuple[list[Any], str | None]:
        ordered = sorted(items, key=key, reverse=newest_first)
        if after is not None:
            after = tuple(after)
            ordered = [i for i in ordered if (key(i) < after if newest_first else key(i) > after)]
        page = ordered[:limit]
        more = len(ordered) > limit
        return page, (_encode_cursor(key(page[-1])) if more and page else None)

    # --- OpenAPI: tasks ---------------------------------------------------------------------

    def _task_summary(self, record: _TaskRecord) -> TaskSummary:
        data = record.data
        closed = data.status.value in TERMINAL_TASK_STATUSES
        summary: dict[str, Any] = {
            "task_id": data.task_id,
            "agent_id": data.agent_id,
            "caller_id": data.caller_id,
            "state": "closed" if closed else "active",
            "close_reason": data.status.value if closed else None,
            "metadata": data.metadata,
            "deadline_at": data.deadline_at,
        }
        return sdk_model(TaskSummary, {k: v for k, v in summary.items() if v is not None})

    def _list_tasks(self, ctx: _Ctx, *, agent_id: str | None) -> _Response:
        state = ctx.q("state") or "active"
        if state not in ("active", "open", "closed", "all"):
            raise self._bad_param(ctx, False, "state", "must be one of active, open, closed, all")
        limit = self._int_param(ctx, "limit", lo=1, hi=100, default=50)
        after = self._cursor(ctx, "since")
        instance_id = ctx.q("instance_id")
        with self._lock:
            rows = [
                r
                for r in self._tasks.values()
                if (agent_id is None or r.data.agent_id == agent_id)
                and (instance_id is None or r.instance_id == instance_id)
                and (
                    state == "all"
                    or (state == "closed") == (r.data.status.value in TERMINAL_TASK_STATUSES)
                )
            ]
            page, cursor = self._page(
                rows, lambda r: (_ts(r.data.created_at), r.seq), after, limit, newest_first=True
            )
            data = ListTasksResponseAllOfData(
                tasks=[self._task_summary(r) for r in page], next_since=cursor or ""
            )
        body = roundtrip(ListTasksResponse, ListTasksResponse(success=True, data=data))
        return self._json(200, body)

    def _list_user_tasks(self, ctx: _Ctx) -> _Response:
        return self._list_tasks(ctx, agent_id=ctx.q("agent_id"))

    def _list_agent_tasks(self, ctx: _Ctx) -> _Response:
        agent_id = ctx.params["agentId"]
        with self._lock:
            known = agent_id in self._agents
        if not known:
            return self._api_error(ctx, 404, "agent_not_found", f"agent {agent_id} not found")
        return self._list_tasks(ctx, agent_id=agent_id)

    def _visible_task(self, ctx: _Ctx) -> _TaskRecord:
        record = self._tasks.get(ctx.params["taskId"])
        if record is None or record.data.agent_id != ctx.params["agentId"]:
            raise _Reject(self._api_error(ctx, 404, "agent_not_found", "task not found"))
        return record

    def _task_response(self, record: _TaskRecord, status: int = 200) -> _Response:
        body = roundtrip(TaskResponse, TaskResponse(success=True, data=record.data))
        return self._json(status, body)

    def _get_task(self, ctx: _Ctx) -> _Response:
        with self._lock:
            return self._task_response(self._visible_task(ctx))

    def _list_task_messages(self, ctx: _Ctx) -> _Response:
        since = self._int_param(ctx, "since", lo=0, hi=None, default=0) or 0
        limit = self._int_param(ctx, "limit", lo=1, hi=500, default=100) or 100
        include_deltas = (ctx.q("include_deltas") or "").lower() in ("true", "1", "yes")
        with self._lock:
            record = self._visible_task(ctx)
            rows = [
                m
                for m in record.messages
                if m.offset > since and (include_deltas or m.type not in DELTA_MESSAGE_TYPES)
            ]
            page = rows[:limit]
            data = ListMessagesResponseAllOfData(
                messages=page,
                latest_offset=record.messages[-1].offset if record.messages else 0,
                next_since=str(page[-1].offset) if page else None,
                has_more=len(rows) > limit,
            )
        body = roundtrip(ListMessagesResponse, ListMessagesResponse(success=True, data=data))
        return self._json(200, body)

    def _cancel_task(self, ctx: _Ctx) -> _Response:
        reason = "canceled"
        if ctx.request.body.strip():
            try:
                parsed = json.loads(ctx.request.body)
            except ValueError:
                return self._api_error(ctx, 400, "invalid_json", "request body is not JSON")
            try:
                request = CancelTaskRequest.from_dict(parsed)
            except ValidationError as exc:
                return self._api_error(ctx, 400, "invalid_body", str(exc.errors()[:1]))
            reason = (request.reason if request else None) or reason
        with self._lock:
            record = self._visible_task(ctx)
            status = record.data.status.value
            if status == "canceled":  # idempotent: a no-op that still returns the snapshot
                return self._task_response(record)
            if status in TERMINAL_TASK_STATUSES:
                return self._api_error(ctx, 409, "conflict", "task is already closed")
            self.add_message(
                record.data.task_id,
                type="chat_cancel",
                publisher_id=self.principal,
                payload={"reason": reason},
            )
            self.set_task_status(record.data.task_id, "canceled", completed_at=self.now())
            self._effect("task.cancel", record.data.task_id, reason=reason)
            return self._task_response(record)

    # --- OpenAPI: runtime operations ------------------------------------------------------

    def _instance(self, ctx: _Ctx) -> str:
        instance_id = ctx.params["instanceId"]
        if instance_id not in self._instances:
            raise _Reject(
                self._api_error(ctx, 404, "instance_not_found", f"instance {instance_id} not found")
            )
        return instance_id

    def _visible_operation(self, ctx: _Ctx) -> _OperationRecord:
        instance_id = self._instance(ctx)
        record = self._operations.get(ctx.params["operationId"])
        if record is None or record.snapshot.instance_id != instance_id:
            raise _Reject(self._api_error(ctx, 404, "OPERATION_NOT_FOUND", "operation not found"))
        return record

    def _list_operations(self, ctx: _Ctx) -> _Response:
        status = ctx.q("status")
        if status is None:
            return self._api_error(ctx, 400, "missing_param", "status is required", param="status")
        if status != "active":
            raise self._bad_param(ctx, False, "status", "must be 'active'")
        limit = self._int_param(ctx, "limit", lo=1, hi=200, default=50) or 50
        cursor = ctx.q("cursor")
        if cursor and len(cursor) > 128:
            raise self._bad_param(ctx, False, "cursor", "longer than 128")
        after = self._cursor(ctx, "cursor")
        with self._lock:
            instance_id = self._instance(ctx)
            rows = [
                r
                for r in self._operations.values()
                if r.snapshot.instance_id == instance_id and not r.snapshot.terminal
            ]
            page, next_cursor = self._page(
                rows,
                lambda r: (_ts(r.snapshot.created_at), r.seq),
                after,
                limit,
                newest_first=False,
            )
            listing = ServiceOperationsListResponse(
                operations=[r.snapshot for r in page], nextCursor=next_cursor
            )
            body = roundtrip(ServiceOperationsListResponse, listing, strict=self.strict)
        return self._json(200, body)

    def _get_operation(self, ctx: _Ctx) -> _Response:
        with self._lock:
            record = self._visible_operation(ctx)
            body = roundtrip(RuntimeOperationSnapshot, record.snapshot, strict=self.strict)
        return self._json(200, body)

    def _stream_operation_events(self, ctx: _Ctx) -> _Response:
        last_event_id = ctx.request.header("Last-Event-ID")
        with self._lock:
            record = self._visible_operation(ctx)
            last_id = int(record.events[-1].id) if record.events else 0
            after = 0
            if last_event_id is not None:
                if not re.fullmatch(r"0|[1-9][0-9]*", last_event_id):
                    raise self._bad_param(ctx, False, "Last-Event-ID", "must be a sequence")
                after = int(last_event_id)
                if after > last_id:
                    conflict = ServiceOperationCursorConflict(
                        code="OPERATION_CURSOR_AHEAD",
                        operationId=record.snapshot.id,
                        cursor=last_event_id,
                        lastSequence=str(last_id),
                        httpStatus=409,
                    )
                    body = roundtrip(ServiceOperationCursorConflict, conflict, strict=self.strict)
                    return self._json(409, body)
            frames = []
            for envelope in record.events:
                if int(envelope.id) <= after:
                    continue
                data = roundtrip(RuntimeOperationEventEnvelope, envelope, strict=self.strict)
                frames.append(f"id: {envelope.id}\ndata: {json.dumps(data)}\n\n".encode())
        return _Response(
            200,
            content_type="text/event-stream",
            headers={"Cache-Control": "no-cache"},
            frames=frames,
        )

    def _cancel_operation(self, ctx: _Ctx) -> _Response:
        key = ctx.request.header("Idempotency-Key")
        if key is None or key == "":
            return self._api_error(
                ctx,
                400,
                "missing_param",
                "Idempotency-Key header is required",
                param="Idempotency-Key",
            )
        if len(key) > 128:
            raise self._bad_param(ctx, False, "Idempotency-Key", "longer than 128 characters")
        operation_id = ctx.params["operationId"]
        header_op = ctx.request.header("X-BeeOS-Operation-Id")
        if header_op is not None and header_op != operation_id:
            raise self._bad_param(
                ctx, False, "X-BeeOS-Operation-Id", "does not match the operation in the path"
            )
        with self._lock:
            seen = self._idempotency.get(key)
            if seen is not None:
                instance_id, seen_op, answer = seen
                if (instance_id, seen_op) != (ctx.params["instanceId"], operation_id):
                    return self._api_error(
                        ctx,
                        422,
                        "IDEMPOTENCY_CONFLICT",
                        "Idempotency-Key was already used for another operation",
                    )
                return copy.deepcopy(answer)  # replay: same answer, no second effect
            record = self._visible_operation(ctx)
            snapshot = record.snapshot
            if snapshot.status not in CANCELLABLE_OPERATION_STATUSES:
                conflict = ServiceOperationCancelConflict(
                    code="OPERATION_NOT_CANCELLABLE", operationId=snapshot.id, httpStatus=409
                )
                body = roundtrip(ServiceOperationCancelConflict, conflict, strict=self.strict)
                answer = self._json(409, body)
            else:
                if snapshot.cancel_request is None:
                    requested = {"requestedBy": self.principal, "requestedAt": self.now()}
                    self.add_event(
                        snapshot.id,
                        "runtime_operation_cancel_requested",
                        payload={"requestedBy": self.principal},
                    )
                    self._update_operation(snapshot.id, cancelRequest=requested)
                    self._effect("operation.cancel_requested", snapshot.id, idempotency_key=key)
                    self._schedule_settle(snapshot.id)
                accepted = ServiceOperationCancelAccepted(
                    status="cancel_requested", operationId=snapshot.id
                )
                body = roundtrip(ServiceOperationCancelAccepted, accepted, strict=self.strict)
                answer = self._json(202, body, {"X-BeeOS-Operation-Id": snapshot.id})
            self._idempotency[key] = (ctx.params["instanceId"], operation_id, answer)
            return copy.deepcopy(answer)

    def _schedule_settle(self, operation_id: str) -> None:
        if self.cancel_settle_seconds is None:
            return
        if self.cancel_settle_seconds <= 0:
            self.settle_cancel(operation_id)
            return
        timer = threading.Timer(self.cancel_settle_seconds, self.settle_cancel, (operation_id,))
        timer.daemon = True
        timer.start()

    # --- Cloud: A2A tasks -----------------------------------------------------------------

    def _a2a_visible(self, agent_id: str, task_id: str) -> _A2ARecord | None:
        record = self._a2a.get(task_id)
        if record is None or agent_id not in (
            record.view["caller_agent_id"],
            record.view["target_agent_id"],
        ):
            return None
        return record

    @staticmethod
    def _error_info(code: int, reason: str, message: str) -> list[dict[str, Any]]:
        return [
            {
                "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                "reason": reason,
                "metadata": {"code": str(code), "message": message},
            }
        ]

    def _a2a_list(self, ctx: _Ctx) -> _Response:
        agent_id = ctx.params["agentId"]
        direction = ctx.q("direction")
        if direction not in (None, "sent", "received"):
            raise self._bad_param(ctx, True, "direction", "must be sent or received")
        other = ctx.q("agent_id")
        if other is not None and len(other) > 128:
            raise self._bad_param(ctx, True, "agent_id", "longer than 128 characters")
        raw_cursor = ctx.q("cursor")
        if raw_cursor and len(raw_cursor.encode()) > 4096:
            raise self._bad_param(ctx, True, "cursor", "longer than 4096 bytes")
        after = self._cursor(ctx, "cursor", cloud_surface=True)
        limit = self._int_param(ctx, "limit", lo=1, hi=100, default=20, cloud_surface=True) or 20

        def matches(view: dict[str, Any]) -> bool:
            sent = view["caller_agent_id"] == agent_id and (
                other is None or view["target_agent_id"] == other
            )
            received = view["target_agent_id"] == agent_id and (
                other is None or view["caller_agent_id"] == other
            )
            return {"sent": sent, "received": received}.get(direction, sent or received)

        with self._lock:
            rows = [r for r in self._a2a.values() if matches(r.view)]
            page, cursor = self._page(
                rows,
                lambda r: (_ts(r.view.get("created_at")), r.seq),
                after,
                limit,
                newest_first=True,
            )
            body = {
                "tasks": [copy.deepcopy(r.view) for r in page],
                "total": len(rows),
                "next_cursor": cursor or "",
                "has_more": cursor is not None,
            }
        return self._json(200, cloud_typed(cloud.ListA2ATasksResponse, body))

    def _a2a_view_for_get(self, view: dict[str, Any], history_length: int) -> dict[str, Any]:
        view = copy.deepcopy(view)
        if "history" in view:
            if history_length == 0:
                del view["history"]
            else:
                view["history"] = view["history"][-history_length:]
        return view

    def _a2a_get(self, ctx: _Ctx) -> _Response:
        length = self._int_param(
            ctx, "history_length", lo=0, hi=200, default=50, cloud_surface=True
        )
        with self._lock:
            record = self._a2a_visible(ctx.params["agentId"], ctx.params["taskId"])
            if record is None:
                return self._a2a_not_found(ctx)
            view = self._a2a_view_for_get(record.view, 50 if length is None else length)
        return self._json(200, cloud_typed(cloud.a2aTaskView, view))

    def _a2a_not_found(self, ctx: _Ctx) -> _Response:
        message = f"A2A task not found: {ctx.params['taskId']}"
        return self._cloud_error(
            ctx,
            404,
            "task_not_found",
            message,
            data=self._error_info(A2A_TASK_NOT_FOUND, "TASK_NOT_FOUND", message),
        )

    def _a2a_do_cancel(self, record: _A2ARecord) -> tuple[bool, str]:
        """Cancel under the lock; False when the task is already terminal."""
        view = record.view
        state = view["status"]["state"]
        if state in A2A_TERMINAL_STATES:
            return False, f"A2A task is not cancelable: {view['id']} ({state})"
        spelling = "TASK_STATE_CANCELED" if state.startswith("TASK_STATE_") else "canceled"
        self.set_a2a_state(view["id"], spelling)
        self._effect("a2a.cancel", view["id"])
        return True, ""

    def _a2a_cancel(self, ctx: _Ctx) -> _Response:
        """REST cancel. The Cloud reference documents only ``default: ErrorResponse`` here;
        the stand-in answers a terminal task with HTTP 409 ``task_not_cancelable`` and
        mirrors the JSON-RPC ``error.data`` (ErrorInfo, metadata.code ``"-32002"``) in an
        extra ``data`` field. The documented -32002 surface is the JSON-RPC invoke."""
        with self._lock:
            record = self._a2a_visible(ctx.params["agentId"], ctx.params["taskId"])
            if record is None:
                return self._a2a_not_found(ctx)
            ok, message = self._a2a_do_cancel(record)
            if not ok:
                return self._cloud_error(
                    ctx,
                    409,
                    "task_not_cancelable",
                    message,
                    data=self._error_info(A2A_TASK_NOT_CANCELABLE, "TASK_NOT_CANCELABLE", message),
                )
            view = copy.deepcopy(record.view)
        return self._json(200, cloud_typed(cloud.a2aTaskView, view))

    def _a2a_invoke(self, ctx: _Ctx) -> _Response:
        """JSON-RPC 2.0: errors travel in the body with HTTP 200 (Cloud A2A reference)."""

        def answer(rpc_id: Any, result: Any = _UNSET, error: dict[str, Any] | None = None):
            body: dict[str, Any] = {"jsonrpc": "2.0", "id": rpc_id}
            if error is not None:
                body["error"] = error
            else:
                body["result"] = result
            return self._json(200, cloud_typed(cloud.RuntimeMethodResponse, body))

        def rpc_error(rpc_id: Any, code: int, reason: str, message: str) -> _Response:
            info = self._error_info(code, reason, message)
            return answer(rpc_id, error={"code": code, "message": message, "data": info})

        try:
            request = json.loads(ctx.request.body)
        except ValueError:
            return rpc_error(None, -32700, "PARSE_ERROR", "Parse error")
        if not isinstance(request, dict) or request.get("jsonrpc") != "2.0":
            return rpc_error(None, -32600, "INVALID_REQUEST", "Invalid request")
        rpc_id = request.get("id")
        method = request.get("method")
        params = request.get("params") or {}
        with self._lock:
            card = self._cards.get(ctx.params["agentId"])
        if card is not None and not card["a2a_enabled"]:
            return self._cloud_error(ctx, 403, "a2a_disabled", "A2A is disabled for this agent")
        if method in push.LIST_METHODS:
            # What the console sends must be the SDK's InvokeA2ARequest (a bad one: a 500).
            check_typed(request, cloud.InvokeA2ARequest, "InvokeA2ARequest")
            return self._a2a_push_list(ctx, rpc_id, method, params, answer, rpc_error)
        if method not in ("GetTask", "tasks/get", "CancelTask", "tasks/cancel"):
            return rpc_error(rpc_id, -32601, "METHOD_NOT_FOUND", f"Method not found: {method}")
        task_id = params.get("id") if isinstance(params, dict) else None
        if not isinstance(task_id, str) or not task_id:
            return rpc_error(rpc_id, -32602, "INVALID_PARAMS", "params.id is required")
        with self._lock:
            record = self._a2a_visible(ctx.params["agentId"], task_id)
            if record is None:
                message = f"A2A task not found: {task_id}"
                return rpc_error(rpc_id, A2A_TASK_NOT_FOUND, "TASK_NOT_FOUND", message)
            if method in ("CancelTask", "tasks/cancel"):
                ok, message = self._a2a_do_cancel(record)
                if not ok:
                    return rpc_error(
                        rpc_id, A2A_TASK_NOT_CANCELABLE, "TASK_NOT_CANCELABLE", message
                    )
                return answer(rpc_id, copy.deepcopy(record.view))
            length = params.get("historyLength", 50)
            if not isinstance(length, int) or isinstance(length, bool) or length < 0:
                return rpc_error(rpc_id, -32602, "INVALID_PARAMS", "historyLength must be >= 0")
            return answer(rpc_id, self._a2a_view_for_get(record.view, length))

    def _a2a_push_list(self, ctx, rpc_id, method, params, answer, rpc_error) -> _Response:
        agent_id = ctx.params["agentId"]
        if agent_id in self._push_unsupported:
            message = "Push notifications are not supported by this agent"
            reason = "PUSH_NOTIFICATION_NOT_SUPPORTED"
            return rpc_error(rpc_id, push.PUSH_NOT_SUPPORTED, reason, message)
        params = params if isinstance(params, dict) else {}
        # 1.0 names the task taskId; the 0.3 alias id.
        key = "id" if method in push.LIST_METHODS_03 else "taskId"
        task_id = params.get(key)
        if not isinstance(task_id, str) or not task_id:
            return rpc_error(rpc_id, -32602, "INVALID_PARAMS", f"params.{key} is required")
        size = params.get("pageSize", 50)
        if not isinstance(size, int) or isinstance(size, bool) or not 1 <= size <= 100:
            return rpc_error(rpc_id, -32602, "INVALID_PARAMS", "pageSize must be 1..100")
        with self._lock:
            if self._a2a_visible(agent_id, task_id) is None:
                message = f"A2A task not found: {task_id}"
                return rpc_error(rpc_id, A2A_TASK_NOT_FOUND, "TASK_NOT_FOUND", message)
            configs = copy.deepcopy(self._push.get(task_id, []))
        token = params.get("pageToken")
        return answer(rpc_id, push.list_result(method, configs, size, token or ""))


class _Handler(BaseHTTPRequestHandler):
    standin: BeeOSStandIn
    protocol_version = "HTTP/1.1"
    timeout = 30  # idle keep-alive connections end on their own

    def setup(self) -> None:
        super().setup()
        # Headers and body go out in two writes: without this, Nagle's algorithm holds
        # the body until the client's delayed ACK of the headers, ~40 ms per answer.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with self.standin._lock:
            self.standin._connections.add(self.connection)

    def finish(self) -> None:
        with self.standin._lock:
            self.standin._connections.discard(self.connection)
        with contextlib.suppress(OSError):
            super().finish()

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        return

    def _serve(self) -> None:
        standin = self.standin
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        split = urlsplit(self.path)
        fault = standin._faults.take(self.command, split.path)
        request = RecordedRequest(
            method=self.command,
            path=split.path,
            query=parse_qs(split.query, keep_blank_values=True),
            headers=dict(self.headers.items()),
            body=body,
            time=time.time(),
            fault=fault.kind if fault else None,
        )
        standin._record(request)
        if fault is not None and fault.kind == DROP and not fault.apply_effect:
            self._drop()
            return
        if fault is not None and fault.kind == RESPOND:
            response = standin._canned(fault, request)
        else:
            response = standin._dispatch(request)
        if fault is not None and fault.kind == DROP:
            self._drop()
            return
        if fault is not None and fault.kind == DELAY and standin._stopping.wait(fault.seconds):
            self._drop()  # stopped while holding the answer
            return
        self._send(response)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _serve

    def _drop(self) -> None:
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)

    def _send(self, response: _Response) -> None:
        try:
            self.send_response(response.status)
            self.send_header("Content-Type", response.content_type)
            for name, value in response.headers.items():
                self.send_header(name, value)
            if response.frames is None:
                self.send_header("Content-Length", str(len(response.body)))
                self.end_headers()
                self.wfile.write(response.body)
            else:
                self.send_header("Connection", "close")
                self.close_connection = True
                self.end_headers()
                for frame in response.frames:
                    self.wfile.write(frame)
                    self.wfile.flush()
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout)
            self.close_connection = True


def parse_sse(text: str) -> list[dict[str, Any]]:
    """Split an SSE body (what ``stream_runtime_operation_events`` returns) into frames:
    ``[{"id": ..., "event": ..., "data": <parsed JSON>}]``."""
    frames: list[dict[str, Any]] = []
    current: dict[str, Any] = {}
    data: list[str] = []
    for line in text.splitlines() + [""]:
        if line == "":
            if data or current:
                if data:
                    current["data"] = json.loads("\n".join(data))
                frames.append(current)
            current, data = {}, []
        elif line.startswith(":"):
            continue
        else:
            name, _, value = line.partition(":")
            value = value.removeprefix(" ")
            if name == "data":
                data.append(value)
            else:
                current[name] = value
    return frames
