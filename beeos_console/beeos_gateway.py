"""The BeeOS gateway: cancels through the official SDKs, answers in plain words.

- OpenAPI tasks: ``beeos_sdk.TasksApi.cancel_task`` (idempotent; 409 = already closed).
- A2A tasks: ``beeos_cloud_sdk`` ``a2a.cancel_task`` (-32002 = not cancelable).
- Runtime operations: ``beeos_sdk.DefaultApi.cancel_runtime_operation`` with the
  required ``Idempotency-Key`` (202 cancel requested, 409 not cancellable).
Writes are never retried here: a blind retry could replay a side effect.
"""

from __future__ import annotations

from typing import Any

import beeos_cloud_sdk
import beeos_sdk
from django.conf import settings

from tasks import states as task_states

from . import upstream
from .gateway import (
    ACCEPTED,
    ALREADY_CLOSED,
    FAILED,
    NOT_CANCELLABLE,
    NOT_FOUND,
    RATE_LIMITED,
    Gateway,
    GatewayAnswer,
    body_json,
    transport_failure,
)

_TRANSPORT_ERRORS = (OSError, beeos_sdk.rest.urllib3.exceptions.HTTPError)


def _sdk_error(exc: beeos_sdk.ApiException, what: str) -> GatewayAnswer:
    body = body_json(exc.body)
    code = _error_code(body)
    status = exc.status
    if status == 409:
        if code == "OPERATION_NOT_CANCELLABLE" or what == "operation":
            return GatewayAnswer(
                NOT_CANCELLABLE,
                "BeeOS refused: the operation is not cancellable in its current state "
                f"({code or 'OPERATION_NOT_CANCELLABLE'}). It was re-read.",
                status,
                upstream={"code": code, "body": body},
            )
        return GatewayAnswer(
            ALREADY_CLOSED,
            "BeeOS says the task had already closed (409). It was re-read: see its final state.",
            status,
            upstream={"code": code, "body": body},
        )
    if status == 404:
        return GatewayAnswer(
            NOT_FOUND,
            f"BeeOS does not know this {what} (404). It may belong to another account.",
            status,
            upstream={"code": code, "body": body},
        )
    if status == 429:
        wait = upstream.retry_after_seconds(exc)
        return GatewayAnswer(
            RATE_LIMITED,
            f"BeeOS is rate limiting us (429): nothing was done. Try again in {wait:g} s.",
            status,
            retry_after=wait,
            upstream={"code": code, "body": body},
        )
    return GatewayAnswer(
        FAILED,
        f"BeeOS answered {status} ({code or 'error'}): the cancel did not go through.",
        status,
        upstream={"code": code, "body": body},
    )


def _error_code(body: dict[str, Any]) -> str:
    error = body.get("error")
    if isinstance(error, dict) and isinstance(error.get("code"), str):
        return error["code"]
    if isinstance(body.get("code"), str):
        return body["code"]
    return ""


def _a2a_rpc_code(body: dict[str, Any]) -> str:
    """The A2A code (e.g. "-32002") in ``data``: one ErrorInfo or a list of them."""
    data = body.get("data")
    for info in data if isinstance(data, list) else [data]:
        if isinstance(info, dict) and isinstance(info.get("metadata"), dict):
            code = info["metadata"].get("code")
            if code not in (None, ""):
                return str(code)
    return ""


class BeeOSGateway(Gateway):
    name = "beeos"
    label = "BeeOS"

    def __init__(self, client: beeos_sdk.ApiClient | None = None, cloud: Any = None) -> None:
        self.client = client or upstream.platform_client()
        self.cloud = cloud

    def _cloud(self) -> Any:
        if self.cloud is None:
            if not settings.BEEOS_CLOUD_URL:
                return None
            self.cloud = beeos_cloud_sdk.BeeOSClient(
                settings.BEEOS_CLOUD_URL,
                settings.BEEOS_CLOUD_API_KEY,
                timeout=upstream.TIMEOUT[1],
            )
        return self.cloud

    # --- tasks ---------------------------------------------------------------

    def cancel_task(self, task: Any, *, idempotency_key: str, reason: str) -> GatewayAnswer:
        if task.protocol == task_states.A2A:
            return self._cancel_a2a(task)
        if task.protocol != task_states.OPENAPI:
            return GatewayAnswer(
                FAILED,
                f"{task.get_protocol_display()} tasks have no BeeOS cancel endpoint; "
                "cancel them where they were produced.",
            )
        api = beeos_sdk.TasksApi(self.client)
        try:
            api.cancel_task(
                task.agent_id,
                task.task_id,
                beeos_sdk.CancelTaskRequest(reason=reason[:500]),
                _request_timeout=upstream.TIMEOUT,
            )
        except beeos_sdk.ApiException as exc:
            return _sdk_error(exc, "task")
        except _TRANSPORT_ERRORS as exc:
            return transport_failure(exc)
        return GatewayAnswer(ACCEPTED, "BeeOS accepted the cancel.", 200)

    def _cancel_a2a(self, task: Any) -> GatewayAnswer:
        cloud = self._cloud()
        if cloud is None:
            return GatewayAnswer(
                FAILED, "A2A cancels need the BeeOS Cloud API (BEEOS_CLOUD_URL is not set)."
            )
        try:
            cloud.a2a.cancel_task(task.agent_id, task.task_id)
        except beeos_cloud_sdk.APIError as exc:
            body = exc.body if isinstance(exc.body, dict) else {}
            rpc_code = _a2a_rpc_code(body)
            code = body.get("code", "")
            if exc.status == 429:
                cause = exc.__cause__
                headers = getattr(cause, "headers", None)
                retry = headers.get("Retry-After") if headers is not None else None
                return GatewayAnswer(
                    RATE_LIMITED,
                    "BeeOS is rate limiting us (429): nothing was done. "
                    f"Try again in {retry or '?'} s.",
                    429,
                    retry_after=float(retry) if retry and retry.isdigit() else None,
                    upstream={"code": code},
                )
            if exc.status == 404:
                return GatewayAnswer(NOT_FOUND, "BeeOS does not know this A2A task (404).", 404)
            if rpc_code == "-32002" or code == "task_not_cancelable" or exc.status == 409:
                return GatewayAnswer(
                    NOT_CANCELLABLE,
                    "BeeOS refused: the A2A task is not cancelable (-32002). It was re-read.",
                    exc.status,
                    upstream={"code": code, "a2a_code": rpc_code or "-32002"},
                )
            return GatewayAnswer(
                FAILED, f"BeeOS answered {exc.status} ({code or 'error'}).", exc.status
            )
        except OSError as exc:
            return transport_failure(exc)
        return GatewayAnswer(ACCEPTED, "BeeOS accepted the A2A cancel.", 200)

    def reread_task(self, task: Any) -> None:
        if task.protocol == task_states.A2A:
            self._reread_a2a(task)
            return
        if task.protocol != task_states.OPENAPI or not task.agent_id:
            return
        from .sync import Syncer

        Syncer(self.client, instances=[]).sync_task(task.agent_id, task.task_id)

    def _reread_a2a(self, task: Any) -> None:
        cloud = self._cloud()
        if cloud is None or not task.agent_id:
            return
        from tasks.services import parse_a2a_task, write_task

        from .sync import ACTOR

        view = cloud.a2a.get_task(task.agent_id, task.task_id)
        write_task(parse_a2a_task(view), actor=ACTOR, authoritative=True)

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
                _request_timeout=upstream.TIMEOUT,
            )
        except beeos_sdk.ApiException as exc:
            return _sdk_error(exc, "operation")
        except _TRANSPORT_ERRORS as exc:
            return transport_failure(exc)
        return GatewayAnswer(
            ACCEPTED,
            "BeeOS accepted the cancel request (202): the operation stops if the runtime "
            "has not committed the effect yet.",
            202,
            upstream={"body": {"status": getattr(accepted, "status", "cancel_requested")}},
        )

    def reread_operation(self, op: Any) -> None:
        from .sync import Syncer

        Syncer(self.client, instances=[]).sync_operation(op.instance_id, op.operation_id)
