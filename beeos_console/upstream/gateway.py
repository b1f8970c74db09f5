"""The BeeOS gateway: cancels through the official SDKs, answers in plain words.

- OpenAPI tasks: ``beeos_sdk.TasksApi.cancel_task`` (idempotent; 409 = already closed).
- A2A tasks: ``beeos_cloud_sdk`` ``a2a.cancel_task`` (-32002 = not cancelable).
- Runtime operations: ``beeos_sdk.DefaultApi.cancel_runtime_operation`` with the
  required ``Idempotency-Key`` (202 cancel requested, 409 not cancellable).
Writes are never retried here: a blind retry could replay a side effect.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import beeos_cloud_sdk
from django.conf import settings
from django.utils.translation import gettext, gettext_lazy

from beeos_console.cancels.gateways import (
    ACCEPTED,
    ALREADY_CLOSED,
    FAILED,
    NOT_CANCELLABLE,
    NOT_FOUND,
    NOT_SENT,
    RATE_LIMITED,
    UNCERTAIN,
    Gateway,
    GatewayAnswer,
    body_json,
    transport_failure,
)
from beeos_console.upstream import clients
from beeos_console.upstream.sdk import beeos_sdk
from beeos_console.upstream.sync import Syncer
from tasks import states as task_states


def _sdk_error(exc: beeos_sdk.ApiException, what: str) -> GatewayAnswer:
    body = body_json(exc.body)
    code = _error_code(body)
    status = exc.status
    if status == 409:
        if code == "OPERATION_NOT_CANCELLABLE" or what == "operation":
            return GatewayAnswer(
                NOT_CANCELLABLE,
                gettext(
                    "BeeOS refused: the operation is not cancellable in its current state "
                    "(%(code)s). It was re-read."
                )
                % {"code": code or "OPERATION_NOT_CANCELLABLE"},
                status,
                upstream={"code": code, "body": body},
            )
        return GatewayAnswer(
            ALREADY_CLOSED,
            gettext(
                "BeeOS says the task had already closed (409). It was re-read: see its final state."
            ),
            status,
            upstream={"code": code, "body": body},
        )
    if status == 404:
        return GatewayAnswer(
            NOT_FOUND,
            (
                gettext(
                    "BeeOS does not know this operation (404). It may belong to another account."
                )
                if what == "operation"
                else gettext(
                    "BeeOS does not know this task (404). It may belong to another account."
                )
            ),
            status,
            upstream={"code": code, "body": body},
        )
    if status == 429:
        wait = clients.retry_after_seconds(exc)
        return GatewayAnswer(
            RATE_LIMITED,
            _rate_limited(f"{wait:g}"),
            status,
            retry_after=wait,
            upstream={"code": code, "body": body},
        )
    return GatewayAnswer(
        FAILED,
        gettext("BeeOS answered %(status)s (%(code)s): the cancel did not go through.")
        % {"status": status, "code": code or "error"},
        status,
        upstream={"code": code, "body": body},
    )


def _rate_limited(wait: str) -> str:
    return gettext(
        "BeeOS is rate limiting us (429): nothing was done. Try again in %(wait)s s."
    ) % {"wait": wait}


def _error_code(body: dict[str, Any]) -> str:
    error = body.get("error")
    if isinstance(error, dict) and isinstance(error.get("code"), str):
        return error["code"]
    if isinstance(body.get("code"), str):
        return body["code"]
    return ""


@dataclass(frozen=True)
class A2AErrorRule:
    """What one A2A JSON-RPC error code means for a cancel (DESIGN.md, Cancel rules)."""

    outcome: str  # a gateway outcome
    meaning: str  # what BeeOS said, in words (lazy: translated when said)
    then: str  # what it means for the operator (lazy too)


# Seed 003's A2A error codes, as DESIGN.md's cancel rules read them. One table: the
# gateway looks a code up here, never in a chain of ifs.
A2A_CANCEL_ERRORS: dict[int, A2AErrorRule] = {
    -32001: A2AErrorRule(
        NOT_FOUND,
        gettext_lazy("the A2A task was not found"),
        gettext_lazy(
            "BeeOS Cloud does not know this task (it may belong to another account); "
            "nothing was cancelled."
        ),
    ),
    -32002: A2AErrorRule(
        NOT_CANCELLABLE,
        gettext_lazy("the A2A task is not cancelable"),
        gettext_lazy("It has already ended or cannot be stopped now. It was re-read."),
    ),
    -32008: A2AErrorRule(
        NOT_SENT,
        gettext_lazy("the agent is busy"),
        gettext_lazy("The cancel was not sent to the agent: nothing happened. Retry later."),
    ),
    -32009: A2AErrorRule(
        FAILED,
        gettext_lazy("the A2A-Version is incompatible"),
        gettext_lazy(
            "The cancel failed: the console and the agent speak incompatible A2A versions, "
            "so a retry will fail the same way until that is fixed."
        ),
    ),
    -32010: A2AErrorRule(
        UNCERTAIN,
        gettext_lazy("the connection was lost after the task was dispatched"),
        gettext_lazy(
            "Outcome uncertain — not resent: the cancel may have reached the agent. The task "
            "was re-read and will be re-read until it shows what happened."
        ),
    ),
    -32011: A2AErrorRule(
        UNCERTAIN,
        gettext_lazy("the task timed out"),
        gettext_lazy(
            "Outcome uncertain — not resent: the cancel may still take effect. The task was "
            "re-read and will be re-read until it shows what happened."
        ),
    ),
    -32012: A2AErrorRule(
        NOT_SENT,
        gettext_lazy("the connection was lost before dispatch"),
        gettext_lazy("Not sent: nothing ran, so it is safe to retry."),
    ),
}
# A code the table does not know: we cannot tell whether the cancel took effect.
A2A_UNKNOWN_ERROR = A2AErrorRule(
    UNCERTAIN,
    gettext_lazy("an A2A error the console has no rule for"),
    gettext_lazy(
        "Outcome uncertain — not resent: the console cannot tell whether the cancel took "
        "effect. The task was re-read and will be re-read until it shows what happened."
    ),
)
# ErrorInfo reasons for when a body carries no numeric code (seed: TASK_NOT_FOUND).
_A2A_CODE_BY_REASON = {"TASK_NOT_FOUND": -32001, "TASK_NOT_CANCELABLE": -32002}


# Meanings of the seed-003 codes a cancel has no rule for (any A2A call may meet them:
# the push-notification settings read does).
_MORE_MEANINGS: dict[int, Any] = {
    -32700: gettext_lazy("the request could not be parsed"),
    -32600: gettext_lazy("the request was invalid"),
    -32601: gettext_lazy("the agent does not know the method"),
    -32602: gettext_lazy("the parameters were invalid"),
    -32603: gettext_lazy("the agent had an internal error"),
    -32003: gettext_lazy("push notifications are not supported by this agent"),
    -32004: gettext_lazy("the operation is not supported"),
    -32005: gettext_lazy("the content type is not supported"),
    -32006: gettext_lazy("the agent's answer was invalid"),
    -32007: gettext_lazy("no agent card is configured"),
}


def a2a_error_meaning(code: int) -> str:
    """What an A2A JSON-RPC error code means, in words (the cancel table first)."""
    rule = A2A_CANCEL_ERRORS.get(code)
    if rule is not None:
        return str(rule.meaning)
    meaning = _MORE_MEANINGS.get(code)
    return (
        str(meaning) if meaning is not None else gettext("an A2A error the console does not know")
    )


def a2a_rpc_error(body: Any) -> beeos_cloud_sdk.RuntimeMethodResponseError | None:
    """The A2A JSON-RPC error in an answer, in the SDK's own error shape.

    It arrives as a JSON-RPC envelope (``{"jsonrpc": "2.0", "error": {...}}``, the
    seed's RuntimeMethodResponse, on HTTP 200 too) or as a Cloud ``ErrorResponse``
    whose ``data`` holds ErrorInfo entries (``metadata.code`` repeats the code).
    """
    if not isinstance(body, dict):
        return None
    if body.get("code") == "invalid_response" and isinstance(body.get("body"), str):
        # The SDK keeps a body that is not an ErrorResponse as text (a JSON-RPC envelope).
        return a2a_rpc_error(body_json(body["body"]))
    error = body.get("error")
    if isinstance(error, dict) and _as_code(error.get("code")) is not None:
        return beeos_cloud_sdk.RuntimeMethodResponseError(
            code=_as_code(error["code"]),
            message=str(error.get("message") or ""),
            data=error.get("data"),
        )
    data = body.get("data")
    for info in _error_infos(data):
        code = _as_code(info.get("metadata", {}).get("code"))
        if code is None:
            code = _A2A_CODE_BY_REASON.get(str(info.get("reason") or ""))
        if code is not None:
            message = info.get("metadata", {}).get("message") or body.get("message") or ""
            return beeos_cloud_sdk.RuntimeMethodResponseError(
                code=code, message=str(message), data=data
            )
    return None


def _error_infos(data: Any) -> list[dict[str, Any]]:
    infos = data if isinstance(data, list) else [data]
    return [
        {**info, "metadata": info.get("metadata") if isinstance(info.get("metadata"), dict) else {}}
        for info in infos
        if isinstance(info, dict)
    ]


def _as_code(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.lstrip("-").isdigit():
        return int(value)
    return None


def a2a_error_answer(body: Any, http_status: int | None) -> GatewayAnswer | None:
    """What an A2A cancel answer carrying a JSON-RPC error means, or None when it carries none."""
    error = a2a_rpc_error(body)
    return None if error is None else _a2a_error_answer(error, http_status, "")


def _a2a_error_answer(
    error: beeos_cloud_sdk.RuntimeMethodResponseError, http_status: int | None, code: str
) -> GatewayAnswer:
    """One A2A JSON-RPC error, looked up in the table, told in words with code and reason."""
    rpc_code = error["code"]
    rule = A2A_CANCEL_ERRORS.get(rpc_code, A2A_UNKNOWN_ERROR)
    reason = next(
        (str(i["reason"]) for i in _error_infos(error.get("data")) if i.get("reason")), ""
    )
    if reason:
        said = gettext("A2A error %(code)s, reason %(reason)s") % {
            "code": rpc_code,
            "reason": reason,
        }
    else:
        said = gettext("A2A error %(code)s") % {"code": rpc_code}
    return GatewayAnswer(
        rule.outcome,
        gettext("BeeOS Cloud answered that %(meaning)s (%(said)s). %(then)s")
        % {"meaning": rule.meaning, "said": said, "then": rule.then},
        http_status,
        upstream={
            "code": code,
            "a2a_code": str(rpc_code),
            "reason": reason,
            "a2a_message": error.get("message", "")[:500],
        },
    )


class BeeOSGateway(Gateway):
    name = "beeos"
    label = "BeeOS"

    def __init__(self, client: beeos_sdk.ApiClient | None = None, cloud: Any = None) -> None:
        self.client = client or clients.platform_client()
        self.cloud = cloud

    def _cloud(self) -> Any:
        if self.cloud is None:
            if not settings.BEEOS_CLOUD_URL:
                return None
            self.cloud = beeos_cloud_sdk.BeeOSClient(
                settings.BEEOS_CLOUD_URL,
                settings.BEEOS_CLOUD_API_KEY,
                timeout=clients.TIMEOUT[1],
            )
        return self.cloud

    # --- tasks ---------------------------------------------------------------

    def cancel_task(self, task: Any, *, idempotency_key: str, reason: str) -> GatewayAnswer:
        if task.protocol == task_states.A2A:
            return self._cancel_a2a(task)
        if task.protocol != task_states.OPENAPI:
            return GatewayAnswer(
                FAILED,
                gettext(
                    "%(protocol)s tasks have no BeeOS cancel endpoint; "
                    "cancel them where they were produced."
                )
                % {"protocol": task.get_protocol_display()},
            )
        api = beeos_sdk.TasksApi(self.client)
        try:
            api.cancel_task(
                task.agent_id,
                task.task_id,
                beeos_sdk.CancelTaskRequest(reason=reason[:500]),
                _request_timeout=clients.TIMEOUT,
            )
        except beeos_sdk.ApiException as exc:
            return _sdk_error(exc, "task")
        except clients.TRANSPORT_ERRORS as exc:
            return transport_failure(exc)
        return GatewayAnswer(ACCEPTED, gettext("BeeOS accepted the cancel."), 200)

    def _cancel_a2a(self, task: Any) -> GatewayAnswer:
        cloud = self._cloud()
        if cloud is None:
            return GatewayAnswer(
                FAILED,
                gettext("A2A cancels need the BeeOS Cloud API (BEEOS_CLOUD_URL is not set)."),
            )
        try:
            view = cloud.a2a.cancel_task(task.agent_id, task.task_id)
        except beeos_cloud_sdk.APIError as exc:
            body = exc.body if isinstance(exc.body, dict) else {}
            code = body.get("code", "")
            rpc_error = a2a_rpc_error(body)
            if rpc_error is not None:
                return _a2a_error_answer(rpc_error, exc.status, code)
            if exc.status == 429:
                cause = exc.__cause__
                headers = getattr(cause, "headers", None)
                retry = headers.get("Retry-After") if headers is not None else None
                return GatewayAnswer(
                    RATE_LIMITED,
                    _rate_limited(retry or "?"),
                    429,
                    retry_after=float(retry) if retry and retry.isdigit() else None,
                    upstream={"code": code},
                )
            if exc.status == 404:
                return GatewayAnswer(
                    NOT_FOUND, gettext("BeeOS does not know this A2A task (404)."), 404
                )
            if code == "task_not_cancelable" or exc.status == 409:
                return _a2a_error_answer(
                    beeos_cloud_sdk.RuntimeMethodResponseError(code=-32002, message=""),
                    exc.status,
                    code,
                )
            return GatewayAnswer(
                FAILED,
                gettext("BeeOS answered %(status)s (%(code)s).")
                % {"status": exc.status, "code": code or "error"},
                exc.status,
            )
        except OSError as exc:
            return transport_failure(exc)
        # JSON-RPC errors travel on HTTP 200 (seed 003): a 200 is not always a success.
        rpc_error = a2a_rpc_error(view)
        if rpc_error is not None:
            return _a2a_error_answer(rpc_error, 200, "")
        return GatewayAnswer(ACCEPTED, gettext("BeeOS accepted the A2A cancel."), 200)

    def reread_task(self, task: Any) -> None:
        if task.protocol == task_states.A2A:
            self._reread_a2a(task)
            return
        if task.protocol != task_states.OPENAPI or not task.agent_id:
            return
        Syncer(self.client, instances=[]).sync_task(task.agent_id, task.task_id)

    def _reread_a2a(self, task: Any) -> None:
        cloud = self._cloud()
        if cloud is None or not task.agent_id:
            return

        # Through the sync's one A2A read: the history the detail page needs, and a
        # truncated one recorded as such (a bare get_task would stop at 50 silently).
        syncer = Syncer(self.client, instances=[], cloud=cloud, a2a_agents=[])
        syncer.sync_a2a_task(task.agent_id, task.task_id)

    # --- runtime operations ------------------------------------------------------

    def cancel_operation(
        self, op: Any, *, idempotency_key: str, reason: str, requested_by: str
    ) -> GatewayAnswer:
        api = beeos_sdk.DefaultApi(self.client)
        try:
            accepted = api.cancel_runtime_operation(
                idempotency_key=idempotency_key,
                instance_id=op.instance_id,
                operation_id=op.operation_id,
                _request_timeout=clients.TIMEOUT,
            )
        except beeos_sdk.ApiException as exc:
            return _sdk_error(exc, "operation")
        except clients.TRANSPORT_ERRORS as exc:
            return transport_failure(exc)
        return GatewayAnswer(
            ACCEPTED,
            gettext(
                "BeeOS accepted the cancel request (202): the operation stops if the runtime "
                "has not committed the effect yet."
            ),
            202,
            upstream={"body": {"status": getattr(accepted, "status", "cancel_requested")}},
        )

    def reread_operation(self, op: Any) -> None:
        Syncer(self.client, instances=[]).sync_operation(op.instance_id, op.operation_id)
