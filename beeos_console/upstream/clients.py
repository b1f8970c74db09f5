"""The BeeOS SDK clients, configured from settings: every call to BeeOS goes through here."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any, TypeVar

import beeos_cloud_sdk
import urllib3
from django.conf import settings

from beeos_console.upstream.sdk import beeos_sdk

T = TypeVar("T")

# (connect, read) seconds for each upstream call.
TIMEOUT = (5.0, 20.0)
MAX_RATE_LIMIT_WAITS = 5
MAX_RETRY_AFTER_SECONDS = 120.0
# A platform call that got no answer: urllib3 (the SDK's transport) reports a lost or
# refused connection as its own HTTPError, not as an OSError.
TRANSPORT_ERRORS = (OSError, urllib3.exceptions.HTTPError)


class UpstreamNotConfigured(RuntimeError):
    pass


def platform_configured() -> bool:
    return bool(settings.BEEOS_API_URL)


def platform_client(host: str | None = None, api_key: str | None = None) -> beeos_sdk.ApiClient:
    """An ``ApiClient`` for the BeeOS platform (OpenAPI tasks, runtime operations)."""
    host = host or settings.BEEOS_API_URL
    if not host:
        raise UpstreamNotConfigured("BEEOS_API_URL is not set.")
    config = beeos_sdk.Configuration(
        host=host.rstrip("/"), access_token=api_key or settings.BEEOS_API_KEY or None
    )
    config.retries = 0  # we decide about retries: a blind retry can replay a side effect
    return beeos_sdk.ApiClient(config)


def cloud_configured() -> bool:
    return bool(settings.BEEOS_CLOUD_URL)


def cloud_client() -> beeos_cloud_sdk.BeeOSClient:
    """A ``BeeOSClient`` for the BeeOS Cloud (A2A tasks of the configured agents)."""
    if not settings.BEEOS_CLOUD_URL:
        raise UpstreamNotConfigured("BEEOS_CLOUD_URL is not set.")
    return beeos_cloud_sdk.BeeOSClient(
        settings.BEEOS_CLOUD_URL, settings.BEEOS_CLOUD_API_KEY, timeout=TIMEOUT[1]
    )


def status_of(exc: BaseException) -> int | None:
    """The HTTP status of an error answer from either SDK (None for transport failures)."""
    if isinstance(exc, beeos_sdk.ApiException | beeos_cloud_sdk.APIError):
        return exc.status
    return None


def header(exc: BaseException, name: str) -> str | None:
    # beeos-sdk keeps the headers on the exception; beeos-cloud-sdk on its HTTPError cause.
    headers = getattr(exc, "headers", None) or getattr(exc.__cause__, "headers", None) or {}
    for key, value in dict(headers).items():
        if key.lower() == name.lower():
            return value
    return None


def retry_after_seconds(exc: BaseException, default: float = 1.0) -> float:
    value = header(exc, "Retry-After")
    try:
        seconds = float(value) if value is not None else default
    except ValueError:
        seconds = default
    return min(max(seconds, 0.0), MAX_RETRY_AFTER_SECONDS)


def honouring_rate_limits(
    call: Callable[[], T],
    *,
    sleep: Callable[[float], None] = time.sleep,
    on_wait: Callable[[float], None] | None = None,
) -> T:
    """Run a *read* call (either SDK), waiting out 429s as ``Retry-After`` says (bounded).

    Only for reads: writes (cancels) are never retried here.
    """
    for attempt in range(MAX_RATE_LIMIT_WAITS + 1):
        try:
            return call()
        except (beeos_sdk.ApiException, beeos_cloud_sdk.APIError) as exc:
            if exc.status != 429 or attempt == MAX_RATE_LIMIT_WAITS:
                raise
            wait = retry_after_seconds(exc)
            if on_wait:
                on_wait(wait)
            sleep(wait)
    raise AssertionError("unreachable")


def raw_json(call: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Call an SDK ``*_without_preload_content`` method and return the JSON body.

    The SDK's typed models reject state values they do not know; the mirror
    must store those raw (projected ``unmapped``), so reads take the raw JSON
    and the SDK still does the request building, auth and error mapping.
    """
    kwargs.setdefault("_request_timeout", TIMEOUT)
    response = call(*args, **kwargs)
    wrapped = beeos_sdk.rest.RESTResponse(response)
    body = wrapped.read() or b""
    if wrapped.status >= 400:
        text = body.decode("utf-8", "replace")
        raise beeos_sdk.ApiException.from_response(http_resp=wrapped, body=text, data=None)
    return json.loads(body) if body else None
