"""The webhook receiver, served before Django's handler (``beeos_console.wsgi``).

BeeOS sends events by the thousand a second and retries one that is not
acknowledged quickly. The receiver is authenticated by its HMAC signature and
answers JSON: it reads no session, user, language or CSRF token and renders no
page, so the middleware after ``SecurityMiddleware`` (sessions, locale, common,
CSRF, authentication, messages, CSP, htmx, axes…) would run for nothing on
every event. ``WebhookFastPath`` wraps Django's WSGI application: a POST to the
receiver's path is answered here, everything else goes to Django unchanged.

What a receiver request still gets, from the same code every request runs:

- the head of ``MIDDLEWARE`` up to ``SecurityMiddleware`` (``outer_middleware``,
  read from the settings): the request id and its JSON log line, the request
  metrics, JSON errors under ``/api/``, the HTTPS redirect and HSTS, each wrapped
  as Django's handler wraps it (an exception is a response, never a crash);
- the host check (``ALLOWED_HOSTS``, as ``CommonMiddleware`` makes it for every
  other request): a disallowed ``Host`` is a 400;
- the receiver's own view (``upstream.webhooks.beeos_webhook``: signature,
  envelope, the one INSERT), with a body over ``DATA_UPLOAD_MAX_MEMORY_SIZE``
  answered 413 and every answer sent with its ``Content-Length`` (keep-alive
  without chunking);
- Django's ``request_started`` and ``request_finished`` signals (a database
  connection past ``CONN_MAX_AGE`` or broken is closed between requests; one the
  server closed meanwhile is replaced by ``inbox.store``).

What it skips: Django's handler and the middleware after ``SecurityMiddleware``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from django.conf import settings
from django.core import signals
from django.core.exceptions import RequestDataTooBig
from django.core.handlers.exception import convert_exception_to_response
from django.core.handlers.wsgi import WSGIRequest, get_script_name
from django.http import HttpRequest, HttpResponse
from django.urls import ResolverMatch, get_script_prefix, resolve, reverse, set_script_prefix
from django.utils import translation
from django.utils.log import log_response
from django.utils.module_loading import import_string

from beeos_console.core.middleware import too_large
from beeos_console.upstream.webhooks import beeos_webhook

URL_NAME = "api-webhook-beeos"
# The last middleware a receiver request goes through; the ones after it are skipped.
LAST_OUTER_MIDDLEWARE = "django.middleware.security.SecurityMiddleware"

Handler = Callable[[HttpRequest], HttpResponse]
StartResponse = Callable[..., Any]


def outer_middleware() -> list[str]:
    """``MIDDLEWARE`` up to and including ``SecurityMiddleware``: what every request,
    the receiver's included, goes through."""
    return settings.MIDDLEWARE[: settings.MIDDLEWARE.index(LAST_OUTER_MIDDLEWARE) + 1]


def receive(request: HttpRequest) -> HttpResponse:
    """The receiver behind the outer middleware: host check, view, 413, length."""
    request.get_host()  # DisallowedHost (a SuspiciousOperation): 400
    try:
        response = beeos_webhook(request)
    except RequestDataTooBig as exc:
        response = too_large(request, exc)
    if not response.has_header("Content-Length"):
        response["Content-Length"] = str(len(response.content))
    return response


def chain(handler: Handler, middleware: Iterable[str]) -> Handler:
    """``handler`` inside ``middleware`` (outermost first), built as Django's
    ``BaseHandler.load_middleware`` builds its chain (synchronous middleware only)."""
    wrapped = convert_exception_to_response(handler)
    for path in reversed(list(middleware)):
        wrapped = convert_exception_to_response(import_string(path)(wrapped))
    return wrapped


class WebhookFastPath:
    """WSGI: ``POST`` to the receiver answered here, any other request by ``django``."""

    def __init__(self, django: Callable[[dict[str, Any], StartResponse], Iterable[bytes]]) -> None:
        self.django = django
        self.handler = chain(receive, outer_middleware())
        self._route: tuple[str, ResolverMatch] | None = None

    def route(self) -> tuple[str, ResolverMatch]:
        """The receiver's path (below the script prefix) and its resolver match (the
        log line's and the metrics' view name), looked up on first use: the URLconf
        may import what is not ready when the application is built."""
        if self._route is None:
            path, prefix = reverse(URL_NAME), get_script_prefix()
            path_info = "/" + path.removeprefix(prefix) if prefix != "/" else path
            self._route = (path_info, resolve(path_info))
        return self._route

    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        if environ.get("REQUEST_METHOD") != "POST":
            return self.django(environ, start_response)
        path, match = self.route()
        if environ.get("PATH_INFO") != path:
            return self.django(environ, start_response)
        return self.serve(environ, start_response, match)

    def serve(
        self, environ: dict[str, Any], start_response: StartResponse, match: ResolverMatch
    ) -> HttpResponse:
        # What Django's WSGIHandler does around its middleware chain.
        set_script_prefix(get_script_name(environ))
        signals.request_started.send(sender=self.__class__, environ=environ)
        translation.deactivate()  # answers in LANGUAGE_CODE, whatever this thread served last
        request = WSGIRequest(environ)
        request.resolver_match = match
        response = self.handler(request)
        if response.status_code >= 400:  # django.request's warning, as for any request
            log_response(
                "%s: %s", response.reason_phrase, request.path, response=response, request=request
            )
        # Closing the response (the server does, after the body) logs the request line
        # and sends request_finished.
        response._resource_closers.append(request.close)
        headers = [*response.items()]
        headers += [("Set-Cookie", c.output(header="")) for c in response.cookies.values()]
        start_response(f"{response.status_code} {response.reason_phrase}", headers)
        return response
