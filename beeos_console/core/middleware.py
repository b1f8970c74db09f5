"""Response headers every page gets, and idle sessions ending."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.contrib.auth import logout
from django.http import HttpRequest, HttpResponse
from django.utils.cache import add_never_cache_headers

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
