"""Requests through a WSGI application, as a server hands them over.

Django's test client calls its own handler, not ``beeos_console.wsgi.application``;
this one builds the request with Django's ``RequestFactory`` and calls the WSGI
application with its environ, reads the body and closes the answer (as gunicorn
does after the last byte: that is when the request's log line is written).
Like the test client, it keeps the test's database connection open across the
request (Django's request signals would close a connection inside a transaction).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

from django.core import signals
from django.db import close_old_connections
from django.test import RequestFactory
from django.utils.datastructures import CaseInsensitiveMapping

WSGIApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


class WSGIResponse:
    """What the server would send: status, headers, body (a test client response's API)."""

    def __init__(self, status: str, headers: list[tuple[str, str]], content: bytes) -> None:
        self.status_code = int(status.split(" ", 1)[0])
        self.header_list = headers
        self.headers = CaseInsensitiveMapping(dict(headers))
        self.content = content

    def __getitem__(self, name: str) -> str:
        return self.headers[name]

    def has_header(self, name: str) -> bool:
        return name in self.headers

    def json(self) -> Any:
        return json.loads(self.content)


class WSGIClient:
    def __init__(self, application: WSGIApp) -> None:
        self.application = application
        self.factory = RequestFactory()

    def call(self, environ: dict[str, Any]) -> WSGIResponse:
        answered: list[tuple[str, list[tuple[str, str]]]] = []
        signals.request_started.disconnect(close_old_connections)
        signals.request_finished.disconnect(close_old_connections)
        try:
            result = self.application(
                environ, lambda status, headers: answered.append((status, headers))
            )
            try:
                content = b"".join(result)
            finally:
                close = getattr(result, "close", None)
                if close is not None:
                    close()
        finally:
            signals.request_started.connect(close_old_connections)
            signals.request_finished.connect(close_old_connections)
        ((status, headers),) = answered
        return WSGIResponse(status, headers, content)

    def generic(
        self,
        method: str,
        path: str,
        data: bytes | str = b"",
        content_type: str = "application/octet-stream",
        **extra: Any,
    ) -> WSGIResponse:
        request = self.factory.generic(method, path, data, content_type, **extra)
        return self.call(request.environ)

    def get(self, path: str, **extra: Any) -> WSGIResponse:
        return self.call(self.factory.get(path, **extra).environ)
