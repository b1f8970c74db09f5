"""The push-notification settings of one A2A task, read through ``beeos-cloud-sdk``.

Seed 003 lists the method under three names: ``ListTaskPushNotificationConfigs`` (A2A 1.0),
``ListPushNotificationConfigs`` and ``tasks/pushNotification/list`` (A2A 0.3 aliases). The
SDK has no call of its own for it: it goes through ``a2a.invoke`` (JSON-RPC, errors on HTTP
200). We send the 1.0 name and fall back to the 0.3 alias when the agent answers -32601.

Read-only: this module never sets or deletes a config. Tokens and credentials never leave
it: a config says only whether one is set.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

import beeos_cloud_sdk
from django.utils.translation import gettext

from beeos_console.upstream import clients
from beeos_console.upstream.gateway import a2a_error_meaning, a2a_rpc_error
from tasks import states as task_states

LIST_METHOD = "ListTaskPushNotificationConfigs"  # A2A 1.0 name (seed 003)
LIST_METHOD_03 = "tasks/pushNotification/list"  # its A2A 0.3 alias (seed 003)
METHOD_NOT_FOUND = -32601
PAGE_SIZE = 100
MAX_PAGES = 10  # 1,000 configs: far more than any task has; beyond that we say "more"


@dataclass(frozen=True)
class PushConfig:
    """One push-notification config, without its secrets."""

    config_id: str
    url: str
    token_set: bool
    schemes: tuple[str, ...] = ()
    credentials_set: bool = False


@dataclass(frozen=True)
class PushConfigRead:
    """The configs, or why there are none to show (``failure`` in words, with its code)."""

    configs: list[PushConfig] = field(default_factory=list)
    failure: str = ""
    code: str = ""  # JSON-RPC code ("-32003") or HTTP error ("403 a2a_disabled")
    reason: str = ""  # ErrorInfo reason, e.g. TASK_NOT_FOUND
    method: str = ""  # the method name that answered
    more: bool = False  # more pages than we read

    @property
    def ok(self) -> bool:
        return not self.failure


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _config(entry: Any) -> PushConfig | None:
    """One config from either shape: 1.0 flat ``{id, url, token, authentication: {scheme}}``
    or 0.3 ``{taskId, pushNotificationConfig: {id, url, token, authentication: {schemes}}}``."""
    if not isinstance(entry, dict):
        return None
    inner = entry.get("pushNotificationConfig")
    config = inner if isinstance(inner, dict) else entry
    auth = config.get("authentication")
    auth = auth if isinstance(auth, dict) else {}
    schemes = auth.get("schemes")
    if not isinstance(schemes, list):
        schemes = [auth.get("scheme")]
    return PushConfig(
        config_id=_text(config.get("id")) or _text(entry.get("id")),
        url=_text(config.get("url")),
        token_set=bool(config.get("token")),
        schemes=tuple(s for s in schemes if isinstance(s, str) and s),
        credentials_set=bool(auth.get("credentials")),
    )


def _entries(result: Any) -> tuple[list[Any], str] | None:
    """The config entries of one page and the next page token, or None for a foreign shape."""
    if isinstance(result, list):  # A2A 0.3: a plain array
        return result, ""
    if isinstance(result, dict) and isinstance(result.get("configs", []), list):
        return result.get("configs", []), _text(result.get("nextPageToken"))
    return None


def _rpc_failure(error: beeos_cloud_sdk.RuntimeMethodResponseError, method: str) -> PushConfigRead:
    code = error["code"]
    infos = error.get("data") if isinstance(error.get("data"), list) else []
    reason = next((str(i["reason"]) for i in infos if isinstance(i, dict) and i.get("reason")), "")
    return PushConfigRead(
        failure=gettext("BeeOS Cloud answered that %(meaning)s.")
        % {"meaning": a2a_error_meaning(code)},
        code=str(code),
        reason=reason,
        method=method,
    )


def _http_failure(exc: beeos_cloud_sdk.APIError) -> PushConfigRead:
    body = exc.body if isinstance(exc.body, dict) else {}
    rpc = a2a_rpc_error(body)
    if rpc is not None:
        return _rpc_failure(rpc, LIST_METHOD)
    code = _text(body.get("code"))
    if exc.status == 429:
        failure = gettext("BeeOS Cloud is rate limiting us (429). Try again in a moment.")
    elif exc.status == 403 and code == "a2a_disabled":
        failure = gettext("A2A is switched off for this agent, so BeeOS Cloud does not answer.")
    elif exc.status >= 500:
        failure = gettext("BeeOS Cloud could not reach the agent (HTTP %(status)s).") % {
            "status": exc.status
        }
    else:
        failure = gettext("BeeOS Cloud refused the request (HTTP %(status)s).") % {
            "status": exc.status
        }
    return PushConfigRead(failure=failure, code=f"{exc.status} {code}".strip())


def _invoke(cloud: Any, agent_id: str, method: str, params: dict[str, Any]) -> Any:
    request = beeos_cloud_sdk.InvokeA2ARequest(
        jsonrpc="2.0", id=uuid.uuid4().hex, method=method, params=params
    )
    # No waiting out 429s here: an operator is looking at the page; we say so instead.
    return cloud.a2a.invoke(agent_id, request)


def _params(method: str, task_id: str, page_token: str) -> dict[str, Any]:
    if method == LIST_METHOD_03:
        return {"id": task_id}
    params: dict[str, Any] = {"taskId": task_id, "pageSize": PAGE_SIZE}
    if page_token:
        params["pageToken"] = page_token
    return params


def read_push_configs(task: Any, cloud: Any = None) -> PushConfigRead:
    """The push-notification configs of an A2A task (``task``: a mirrored Task)."""
    if task.protocol != task_states.A2A:
        return PushConfigRead(
            failure=gettext(
                "Only A2A tasks have push-notification settings; this is a %(protocol)s task."
            )
            % {"protocol": task.get_protocol_display()}
        )
    agent_id = task.agent_id or getattr(task, "target_agent_id", "")
    if not agent_id:
        return PushConfigRead(failure=gettext("The task names no agent to ask."))
    try:
        cloud = cloud or clients.cloud_client()
    except clients.UpstreamNotConfigured:
        return PushConfigRead(
            failure=gettext("The BeeOS Cloud API is not configured (BEEOS_CLOUD_URL is not set).")
        )
    method, configs, token = LIST_METHOD, [], ""
    try:
        for _page in range(MAX_PAGES):
            answer = _invoke(cloud, agent_id, method, _params(method, task.task_id, token))
            error = a2a_rpc_error(answer)
            if error is not None:
                if error["code"] == METHOD_NOT_FOUND and method == LIST_METHOD and not configs:
                    method = LIST_METHOD_03  # an agent that speaks only A2A 0.3
                    continue
                return _rpc_failure(error, method)
            page = _entries(answer.get("result") if isinstance(answer, dict) else None)
            if page is None:
                return PushConfigRead(
                    failure=gettext(
                        "BeeOS Cloud answered with something that is not a list of "
                        "push-notification configs."
                    ),
                    method=method,
                )
            configs.extend(c for c in map(_config, page[0]) if c is not None)
            token = page[1]
            if not token:
                return PushConfigRead(configs=configs, method=method)
    except beeos_cloud_sdk.APIError as exc:
        return _http_failure(exc)
    except ValueError:  # not JSON at all
        return PushConfigRead(
            failure=gettext("BeeOS Cloud answered with something that is not JSON.")
        )
    except OSError as exc:
        return PushConfigRead(
            failure=gettext("BeeOS Cloud is unreachable (%(error)s).")
            % {"error": type(exc).__name__}
        )
    return PushConfigRead(configs=configs, method=method, more=True)
