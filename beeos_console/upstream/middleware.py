"""The webhook receiver's short way through the middleware stack.

BeeOS retries a webhook that is not acknowledged quickly, and sends thousands a
second. The receiver is authenticated by its HMAC signature and answers JSON: it
reads no session, user, language or CSRF token, sets no cookie and renders no
page. Sessions, locale, common, CSRF, authentication, login-required, idle
sessions, messages, CSP, frame options, htmx and axes would each run for nothing
on every event (about half of a receiver request's CPU). This middleware, placed
right after ``SecurityMiddleware`` (so the HTTPS redirect and HSTS still apply)
and after the request log, the request metrics and the JSON errors (which still
see every event), hands a POST to the receiver's URL straight to its view.
Anything else (another method, another path) goes down the normal stack.
"""

from __future__ import annotations

from collections.abc import Callable

from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse
from django.urls import ResolverMatch, get_script_prefix, resolve, reverse

from beeos_console.core.middleware import too_large
from beeos_console.upstream.webhooks import beeos_webhook

URL_NAME = "api-webhook-beeos"


class WebhookFastPathMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response
        self._route: tuple[str, ResolverMatch] | None = None

    def route(self) -> tuple[str, ResolverMatch]:
        """The receiver's path and its resolver match (for the request log and metrics),
        looked up once: the URLconf is not loaded yet when middleware is built."""
        if self._route is None:
            path, prefix = reverse(URL_NAME), get_script_prefix()
            path_info = "/" + path.removeprefix(prefix) if prefix != "/" else path
            self._route = (path_info, resolve(path_info))
        return self._route

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.method != "POST":
            return self.get_response(request)
        path, match = self.route()
        if request.path_info != path:
            return self.get_response(request)
        request.resolver_match = match
        try:
            response = beeos_webhook(request)
        except RequestDataTooBig as exc:
            response = too_large(request, exc)
        # What CommonMiddleware would add: the length, so keep-alive needs no chunking.
        if not response.has_header("Content-Length"):
            response["Content-Length"] = str(len(response.content))
        return response
