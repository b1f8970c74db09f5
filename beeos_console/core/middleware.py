"""Response headers every page gets, idle sessions ending, and JSON errors under /api/."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.contrib.auth import logout
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse, JsonResponse, QueryDict
from django.utils.cache import add_never_cache_headers
from django.utils.translation import gettext, gettext_lazy
from django.views.defaults import bad_request
from rest_framework.response import Response as DRFResponse

# When the session was last seen active (epoch seconds), stamped at login.
LAST_SEEN_KEY = "_console_last_seen"
# The session's expiry moves forward at most this often: a write a minute, not one
# per request on the list pages.
REFRESH_SECONDS = 60
# Sent by static/js/console.js on htmx auto-refresh polls ("every Ns"): a page left
# open does not keep its session alive.
POLL_HEADER = "X-Console-Poll"


class SecurityHeadersMiddleware:
    """``Permissions-Policy`` on every response; ``Cache-Control: no-store`` on every
    authenticated one (a shared or back-button cache never keeps a console page)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        policy = getattr(settings, "PERMISSIONS_POLICY", "")
        if policy and "Permissions-Policy" not in response:
            response["Permissions-Policy"] = policy
        if _authenticated(request):
            add_never_cache_headers(response)
        return response


def _authenticated(request: HttpRequest) -> bool:
    if request.headers.get("Authorization"):
        return True  # an API call with a token: its answer is as private as a page
    user = getattr(request, "user", None)
    return bool(user is not None and user.is_authenticated)


def idle_seconds() -> int:
    return int(settings.SESSION_COOKIE_AGE)


class IdleSessionMiddleware:
    """Logs a session out after ``CONSOLE_SESSION_IDLE_MINUTES`` without a request.

    The database session expires ``SESSION_COOKIE_AGE`` after its last save; this
    moves that forward at most once a minute (and also refuses a session whose last
    activity is older than the idle time, whatever its stored expiry). Auto-refresh
    polls (``X-Console-Poll: 1``) do not count as activity.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.user.is_authenticated:
            now = int(time.time())
            idle = idle_seconds()
            last_seen = request.session.get(LAST_SEEN_KEY)
            if isinstance(last_seen, int) and now - last_seen > idle:
                logout(request)  # the login page follows (LoginRequiredMiddleware)
            elif request.headers.get(POLL_HEADER) == "1":
                pass  # an auto-refresh poll is not activity
            elif not isinstance(last_seen, int) or now - last_seen >= min(
                REFRESH_SECONDS, idle // 2
            ):
                request.session[LAST_SEEN_KEY] = now  # saved: a new expiry
        return self.get_response(request)


def stamp_login(sender: Any, request: HttpRequest | None = None, **kwargs: Any) -> None:
    """``user_logged_in``: a new session starts active (no write on its first page)."""
    session = getattr(request, "session", None)
    if session is not None:
        session[LAST_SEEN_KEY] = int(time.time())


API_PREFIX = "/api/"
# HTML pages under /api/ (Swagger UI): their errors stay pages.
API_HTML_PREFIXES = ("/api/docs/",)
# The human-readable ``detail`` (translated: DRF's own catalogue holds most of these);
# the HTTP status is the machine-readable part.
API_ERROR_DETAIL = {
    400: gettext_lazy("Bad request."),
    403: gettext_lazy("You do not have permission to perform this action."),
    404: gettext_lazy("Not found."),
    405: gettext_lazy("Method not allowed."),
    413: gettext_lazy("The request body is too large."),
    500: gettext_lazy("Server error."),
}


def is_api_request(request: HttpRequest) -> bool:
    path = request.path_info
    return path.startswith(API_PREFIX) and not path.startswith(API_HTML_PREFIXES)


class ApiErrorsMiddleware:
    """Every error answer under ``/api/`` is JSON, whoever produced it.

    First in ``MIDDLEWARE``: it also sees the answers Django itself makes before
    or around a view — a disallowed host, a suspicious operation, a malformed
    multipart body, an unknown URL, a crash (``handler500``) — and turns any
    non-JSON error into ``{"detail": …}`` with the same status. DRF's own answers
    are left as DRF rendered them. A body over ``DATA_UPLOAD_MAX_MEMORY_SIZE``
    (Django's ``RequestDataTooBig``, a 400 elsewhere) is a 413 here.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if (
            response.status_code >= 400
            and is_api_request(request)
            and not isinstance(response, DRFResponse)
            and not response.get("Content-Type", "").startswith("application/json")
        ):
            return _as_json(response)
        return response

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if isinstance(exception, RequestDataTooBig):
            return too_large(request, exception)
        return None


def too_large(request: HttpRequest, exception: RequestDataTooBig) -> HttpResponse:
    """A body over ``DATA_UPLOAD_MAX_MEMORY_SIZE``: 413 (JSON) under /api/, else the 400 page."""
    if is_api_request(request):
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        return JsonResponse(
            {
                "detail": gettext("The request body is too large: at most %(limit)s bytes.")
                % {"limit": limit}
            },
            status=413,
        )
    return bad_request(request, exception)


def _as_json(response: HttpResponse) -> JsonResponse:
    status = response.status_code
    detail = API_ERROR_DETAIL.get(status) or f"{response.reason_phrase}."
    answer = JsonResponse({"detail": str(detail)}, status=status)
    for header, value in response.items():
        if header.lower() not in ("content-type", "content-length"):
            answer[header] = value
    answer.cookies = response.cookies
    return answer


FORM_CONTENT_TYPES = ("application/x-www-form-urlencoded", "multipart/form-data")


class NulParametersMiddleware:
    """A NUL character in the path, a query parameter or a form field: 400.

    PostgreSQL can neither store nor compare text holding NUL, and no console
    id, filter or form value may contain one; refusing it here, once, keeps it
    from every lookup a view makes (``?protocol=``, a picked id, a path id).
    JSON bodies are checked where they are parsed (``core.jsonbody`` and the
    mirror's edge validation).
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        form = request.method == "POST" and request.content_type in FORM_CONTENT_TYPES
        try:
            if form:
                # Read (and keep) the raw body first: a view that verifies it (the
                # webhook's signature) can still read it after the form is parsed.
                request.body  # noqa: B018
            nul = "\x00" in request.path_info or _has_nul(request.GET)
            nul = nul or (form and _has_nul(request.POST))
        except RequestDataTooBig as exc:
            return too_large(request, exc)
        if nul:
            return bad_request(request, ValueError("NUL character in the request"))
        return self.get_response(request)


def _has_nul(params: QueryDict) -> bool:
    return any("\x00" in key or any("\x00" in v for v in values) for key, values in params.lists())
