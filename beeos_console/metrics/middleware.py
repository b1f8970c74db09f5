"""Request latency by view, and what the ingest API and the webhook receiver answered.

The view label is the URL pattern's name (``tasks:detail``, ``task-list``,
``api-ingest``), never the path: ids would make one series per object. Requests
no pattern matched are ``unmatched`` (``static`` for files whitenoise served).

Ingest records and webhook events are counted from the answer the caller got
(the documented API: one ``result`` per record; ``{"result": …}`` per event), so
the services stay free of metrics code and the counts are exactly what feeders
and BeeOS were told.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse

from beeos_console.metrics import instruments
from beeos_console.mirror import registry

METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
UNMATCHED = "unmatched"
STATIC = "static"
# A result word we label by: short, lower-case identifier (anything else is "other").
MAX_RESULT_LENGTH = 32


def view_label(request: HttpRequest) -> str:
    match = getattr(request, "resolver_match", None)
    if match is not None:
        return match.view_name
    static_prefix = "/" + settings.STATIC_URL.lstrip("/")
    return STATIC if request.path.startswith(static_prefix) else UNMATCHED


def status_class(status_code: int) -> str:
    return f"{status_code // 100}xx" if 100 <= status_code < 600 else "other"


def result_word(value: Any) -> str:
    """A result as a label value: our own vocabulary passes, anything odd is ``other``."""
    if (
        isinstance(value, str)
        and 0 < len(value) <= MAX_RESULT_LENGTH
        and value.isidentifier()
        and value.islower()
    ):
        return value
    return "other"


def ingest_results(response: HttpResponse) -> Iterable[tuple[str, str]]:
    """(record kind, result) for every record the ingest API answered."""
    data = getattr(response, "data", None)  # a DRF Response keeps what it rendered
    if response.status_code != 200 or not isinstance(data, dict):
        return []
    kinds = registry.record_kinds()
    return [
        (item.get("kind") if item.get("kind") in kinds else "unknown", result_word(item["result"]))
        for item in data.get("results") or []
        if isinstance(item, dict) and "result" in item
    ]


def webhook_result(response: HttpResponse) -> str:
    """The receiver's ``result`` word on a 2xx, else ``http_<status>``."""
    if not 200 <= response.status_code < 300:
        return f"http_{response.status_code}"
    try:
        body = json.loads(response.content)
    except (ValueError, AttributeError):
        return "other"
    return result_word(body.get("result")) if isinstance(body, dict) else "other"


def count_ingest(response: HttpResponse) -> None:
    for (kind, result), n in Counter(ingest_results(response)).items():
        instruments.INGEST_RECORDS.labels(kind, result).inc(n)


def count_webhook(response: HttpResponse) -> None:
    instruments.WEBHOOK_EVENTS.labels(webhook_result(response)).inc()


# URL name -> what to count from its answers. One line per counted endpoint.
RESULT_COUNTERS: dict[str, Callable[[HttpResponse], None]] = {
    "api-ingest": count_ingest,
    "api-webhook-beeos": count_webhook,
}


class RequestMetricsMiddleware:
    """Observes every request's duration; counts the results of the endpoints above."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        started = time.perf_counter()
        response = self.get_response(request)
        elapsed = time.perf_counter() - started
        view = view_label(request)
        method = request.method if request.method in METHODS else "other"
        instruments.REQUEST_SECONDS.labels(
            view, method, status_class(response.status_code)
        ).observe(elapsed)
        counter = RESULT_COUNTERS.get(view)
        if counter is not None and method == "POST":
            counter(response)
        return response
