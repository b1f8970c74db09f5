"""One log line per request, and log lines as JSON objects.

``RequestLogMiddleware`` (first in MIDDLEWARE) gives every request an id — the
caller's ``X-Request-ID`` when it is well formed, else a new one — echoes it in the
response's ``X-Request-ID`` and, once the last byte of the body is out (a streamed
CSV export included), logs one line on ``beeos_console.request``: method, path,
status, view, user and duration.

``JsonFormatter`` writes any record as one JSON object per line: ``timestamp``,
``level``, ``logger``, ``message``, ``request_id`` (of the request being served, or
null), the record's extra fields, and the traceback when there is one. ``LOG_FORMAT``
picks it (``json``, the default when DEBUG is off) or plain text (``text``).
"""

from __future__ import annotations

import json
import logging
import re
import time
import uuid
from collections.abc import Callable
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Any

from django.http import HttpRequest, HttpResponseBase
from django.utils.functional import empty

logger = logging.getLogger("beeos_console.request")

HEADER = "X-Request-ID"
META_KEY = "HTTP_X_REQUEST_ID"  # the header in the WSGI environ (no ``request.headers`` built)
# A caller's id is kept when it is this short and this plain (UUIDs, trace ids,
# "lb-1234:5"); anything else could forge log fields or bloat every line.
_WELL_FORMED = re.compile(r"[A-Za-z0-9._:-]{1,128}")

# The id of the request this thread is serving, for every line logged meanwhile.
current_request_id: ContextVar[str | None] = ContextVar("current_request_id", default=None)

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s %(message)s"


def request_id_from(header: str | None) -> str:
    """The caller's id when well formed, else a new random one."""
    if header and _WELL_FORMED.fullmatch(header):
        return header
    return uuid.uuid4().hex


class RequestLogMiddleware:
    """Request id in and out, and one ``beeos_console.request`` line per request."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        started = time.perf_counter()
        request_id = request_id_from(request.META.get(META_KEY))
        request.request_id = request_id  # type: ignore[attr-defined]
        current_request_id.set(request_id)
        response = self.get_response(request)
        response[HEADER] = request_id
        # Logged when the server closes the response: after the whole body, so a
        # streamed export's duration is its real one.
        close = response.close
        logged = False

        def close_and_log() -> None:
            nonlocal logged
            try:
                close()
            finally:
                if not logged:
                    logged = True
                    log_request(request, response, request_id, started)
                    current_request_id.set(None)

        response.close = close_and_log  # type: ignore[method-assign]
        return response


def log_request(
    request: HttpRequest, response: HttpResponseBase, request_id: str, started: float
) -> None:
    duration_ms = round((time.perf_counter() - started) * 1000, 1)
    match = getattr(request, "resolver_match", None)
    fields = {
        "request_id": request_id,
        "user": _username(request),
        "view": match.view_name if match is not None else None,
        "method": request.method,
        "path": request.path,
        "status": response.status_code,
        "duration_ms": duration_ms,
    }
    logger.info(
        "%s %s %s %sms",
        request.method,
        request.path,
        response.status_code,
        duration_ms,
        extra=fields,
    )


def _username(request: HttpRequest) -> str | None:
    """The user's name when a middleware or view already loaded the user: logging
    never costs a query of its own."""
    user = getattr(request, "user", None)
    if user is None or getattr(user, "_wrapped", None) is empty:
        return None
    if not user.is_authenticated:
        return None
    return user.get_username()


# LogRecord's own attributes; anything else on a record came from ``extra=``.
_RECORD_ATTRIBUTES = frozenset(vars(logging.makeLogRecord({}))) | {"message", "asctime"}
# Extras that are objects, not data (Django's loggers attach the request).
_SKIPPED_EXTRAS = frozenset({"request"})


class JsonFormatter(logging.Formatter):
    """A record as one JSON object on one line."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "timestamp": datetime.fromtimestamp(record.created, UTC)
            .isoformat(timespec="milliseconds")
            .replace("+00:00", "Z"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            "request_id": current_request_id.get(),
        }
        for key, value in vars(record).items():
            if key not in _RECORD_ATTRIBUTES and key not in _SKIPPED_EXTRAS:
                entry[key] = value
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        if record.stack_info:
            entry["stack"] = self.formatStack(record.stack_info)
        # default=str: an extra that is not JSON (a datetime, an object) is its text.
        return json.dumps(entry, default=str, ensure_ascii=False)


def formatter_config(log_format: str) -> dict[str, Any]:
    """The ``formatters`` entry of a logging dictConfig for LOG_FORMAT (Django's LOGGING
    and gunicorn's logconfig_dict use the same)."""
    if log_format == "json":
        return {"()": "beeos_console.core.requestlog.JsonFormatter"}
    return {"format": TEXT_FORMAT}
