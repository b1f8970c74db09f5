"""Every login is audited: ``login.succeeded``, ``login.failed``, ``login.locked_out``
(django-axes locked the username+IP out), ``login.unlocked`` (an admin lifted it) and
``logout``; ``detail.method`` says ``password`` or ``sso`` (single sign-on).

The actor is the username that was tried (actor kind ``user``); the object is that
user name, the detail the client address and the failure count.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from axes.models import AccessAttempt
from axes.signals import user_locked_out
from axes.utils import reset
from django.conf import settings
from django.contrib.auth import BACKEND_SESSION_KEY
from django.contrib.auth.signals import user_logged_in, user_logged_out, user_login_failed
from django.db import transaction
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils import timezone

from beeos_console.accounts import sso
from beeos_console.auditlog.services import Actor, record

ACTOR_MAX = 150  # AuditEntry.actor
OBJECT_MAX = 256  # AuditEntry.object_id


def _actor(username: str | None) -> Actor:
    return Actor(name=(username or "")[:ACTOR_MAX])


def client_detail(request: HttpRequest | None) -> dict[str, Any]:
    """The client address and path an audit entry of a login keeps."""
    if request is None:
        return {}
    address = getattr(request, "axes_ip_address", None) or request.META.get("REMOTE_ADDR", "")
    return {"ip_address": address, "path": request.path}


def _method(backend: str | None) -> str:
    return "sso" if backend == sso.SSO_BACKEND else "password"


def on_login_failed(
    sender: Any, credentials: dict[str, Any], request: HttpRequest | None = None, **kwargs: Any
) -> None:
    username = str(credentials.get("username") or "")
    locked = bool(getattr(request, "axes_locked_out", False))
    failures = getattr(request, "axes_failures_since_start", None)
    if locked and failures is None:
        reason = "locked out: the password was not checked"
    elif locked:
        reason = "wrong credentials: this failure locked the login out"
    else:
        reason = "wrong credentials"
    record(
        _actor(username),
        "login.failed",
        "user",
        username[:OBJECT_MAX],
        reason=reason,
        detail={
            **client_detail(request),
            "method": "password",
            "failures": failures,
            "locked_out": locked,
        },
    )


def on_locked_out(
    sender: Any, request: HttpRequest, username: str | None, ip_address: str, **kwargs: Any
) -> None:
    # axes also signals each later try while the lockout lasts; only the failure that
    # locked the client out carries a count (a try while locked is not counted).
    failures = getattr(request, "axes_failures_since_start", None)
    if failures is None:
        return
    record(
        _actor(username),
        "login.locked_out",
        "user",
        (username or "")[:OBJECT_MAX],
        reason=f"{failures} failed logins",
        detail={
            **client_detail(request),
            "failures": failures,
            "limit": settings.AXES_FAILURE_LIMIT,
            "cooloff_minutes": settings.CONSOLE_LOGIN_COOLOFF_MINUTES,
        },
    )


def on_logged_in(sender: Any, request: HttpRequest | None, user: Any, **kwargs: Any) -> None:
    if request is None:
        return
    record(
        Actor.of_user(user),
        "login.succeeded",
        "user",
        user.get_username()[:OBJECT_MAX],
        detail={**client_detail(request), "method": _method(getattr(user, "backend", None))},
    )


def on_logged_out(sender: Any, request: HttpRequest | None, user: Any, **kwargs: Any) -> None:
    if request is None or user is None:
        return
    record(
        Actor.of_user(user),
        "logout",
        "user",
        user.get_username()[:OBJECT_MAX],
        detail={
            **client_detail(request),
            "method": _method(request.session.get(BACKEND_SESSION_KEY)),
            # RP-initiated logout: the identity provider's session is ended too.
            "provider_logout": bool(getattr(request, "console_provider_logout", False)),
        },
    )


def connect() -> None:
    user_login_failed.connect(on_login_failed, dispatch_uid="console-login-failed")
    user_locked_out.connect(on_locked_out, dispatch_uid="console-login-locked-out")
    user_logged_in.connect(on_logged_in, dispatch_uid="console-login-succeeded")
    user_logged_out.connect(on_logged_out, dispatch_uid="console-logout")


# --- current lockouts -----------------------------------------------------------------


def cooloff() -> timedelta:
    return timedelta(minutes=settings.CONSOLE_LOGIN_COOLOFF_MINUTES)


def current_lockouts() -> QuerySet[AccessAttempt]:
    """Username+address pairs locked out now (at the limit, within the cool-off)."""
    return AccessAttempt.objects.filter(
        failures_since_start__gte=settings.AXES_FAILURE_LIMIT,
        attempt_time__gt=timezone.now() - cooloff(),
    ).order_by("-attempt_time")


def unlock(attempt: AccessAttempt, *, by: Any) -> None:
    """Lift one lockout (the username+address pair), audited."""
    with transaction.atomic():
        reset(ip=attempt.ip_address, username=attempt.username)
        record(
            Actor.of_user(by),
            "login.unlocked",
            "user",
            (attempt.username or "")[:OBJECT_MAX],
            detail={
                "ip_address": attempt.ip_address,
                "failures": attempt.failures_since_start,
                "last_failure": attempt.attempt_time.isoformat(),
            },
        )
