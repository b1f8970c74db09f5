"""A2A push-notification configs for the stand-in's JSON-RPC ``POST /v1/a2a/{agentId}``.

Seed 003 names the list method ``ListTaskPushNotificationConfigs`` (A2A 1.0) with the
aliases ``ListPushNotificationConfigs`` and ``tasks/pushNotification/list`` (0.3). The
cloud SDK has no type for the configs (they travel as ``RuntimeMethodResponse.result``, a
JSONValue), so the shapes are the A2A ones, typed here and checked with the same contract
checker as the SDK's TypedDicts; the envelope itself is the SDK's ``RuntimeMethodResponse``.
"""

from __future__ import annotations

from typing import NotRequired, Required, TypedDict

from .contract import check_typed, jsonable

LIST_METHODS_10 = frozenset({"ListTaskPushNotificationConfigs", "ListPushNotificationConfigs"})
LIST_METHODS_03 = frozenset({"tasks/pushNotification/list"})
LIST_METHODS = LIST_METHODS_10 | LIST_METHODS_03
PUSH_NOT_SUPPORTED = -32003


class AuthenticationInfo10(TypedDict):
    scheme: Required[str]
    credentials: NotRequired[str]


class TaskPushNotificationConfig10(TypedDict):
    """A2A 1.0: the config, flat."""

    id: Required[str]
    taskId: Required[str]
    url: Required[str]
    token: NotRequired[str]
    authentication: NotRequired[AuthenticationInfo10]


class ListTaskPushNotificationConfigsResponse(TypedDict):
    configs: Required[list[TaskPushNotificationConfig10]]
    nextPageToken: NotRequired[str]


class AuthenticationInfo03(TypedDict):
    schemes: Required[list[str]]
    credentials: NotRequired[str]


class PushNotificationConfig03(TypedDict):
    id: NotRequired[str]
    url: Required[str]
    token: NotRequired[str]
    authentication: NotRequired[AuthenticationInfo03]


class TaskPushNotificationConfig03(TypedDict):
    """A2A 0.3: the config nested under its task."""

    taskId: Required[str]
    pushNotificationConfig: Required[PushNotificationConfig03]


def seed_config(task_id: str, config: dict) -> dict:
    """One config as stored (the 1.0 shape), checked: ``{id, url, token?, authentication?}``."""
    stored = jsonable({"taskId": task_id, **config})
    check_typed(stored, TaskPushNotificationConfig10, "TaskPushNotificationConfig")
    return stored


def list_result(method: str, configs: list[dict], page_size: int, page_token: str) -> object:
    """The ``result`` of a list call: 1.0 ``{configs, nextPageToken}`` (paged), 0.3 an array."""
    if method in LIST_METHODS_03:
        result03 = []
        for c in configs:
            inner = {k: c[k] for k in ("id", "url", "token") if k in c}
            if "authentication" in c:
                auth = c["authentication"]
                inner["authentication"] = {"schemes": [auth["scheme"]]} | (
                    {"credentials": auth["credentials"]} if "credentials" in auth else {}
                )
            result03.append({"taskId": c["taskId"], "pushNotificationConfig": inner})
        check_typed(result03, list[TaskPushNotificationConfig03], "result")
        return result03
    start = int(page_token) if page_token.isdigit() else 0
    page = configs[start : start + page_size]
    more = start + page_size < len(configs)
    result = {"configs": page, "nextPageToken": str(start + page_size) if more else ""}
    check_typed(result, ListTaskPushNotificationConfigsResponse, "result")
    return result
