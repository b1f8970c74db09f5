"""The login and logout pages (their ``next`` checked by core's one helper) and the
admins' lockout page."""

from __future__ import annotations

from typing import Any

from axes.helpers import get_client_username
from axes.models import AccessAttempt
from django.conf import settings
from django.contrib import messages
from django.contrib.auth import views as auth_views
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_POST

from beeos_console.accounts import logins
from beeos_console.core import roles
from beeos_console.core.permissions import role_required
from beeos_console.core.redirects import is_safe_target


class SafeNextMixin:
    """``next`` is followed only when it names this console (else the default page)."""

    request: HttpRequest
    redirect_field_name: str

    def get_redirect_url(self) -> str:
        target = self.request.POST.get(
            self.redirect_field_name, self.request.GET.get(self.redirect_field_name)
        )
        return target if is_safe_target(self.request, target) else ""


class LoginView(SafeNextMixin, auth_views.LoginView):
    template_name = "registration/login.html"
    redirect_authenticated_user = False


class LogoutView(SafeNextMixin, auth_views.LogoutView):
    pass


def locked_out(
    request: HttpRequest, original_response: Any = None, credentials: Any = None
) -> HttpResponse:
    """The page a locked-out login gets (``AXES_LOCKOUT_CALLABLE``), 429 as axes answers."""
    context = {
        "username": get_client_username(request, credentials) or "",
        "failure_limit": settings.AXES_FAILURE_LIMIT,
        "cooloff_minutes": settings.CONSOLE_LOGIN_COOLOFF_MINUTES,
    }
    return render(
        request,
        "registration/locked_out.html",
        context,
        status=settings.AXES_HTTP_RESPONSE_CODE,
    )


@require_GET
@role_required(roles.ADMIN)
def lockouts_view(request: HttpRequest) -> HttpResponse:
    cooloff = logins.cooloff()
    context = {
        "lockouts": [(a, a.attempt_time + cooloff) for a in logins.current_lockouts()[:200]],
        "failure_limit": settings.AXES_FAILURE_LIMIT,
        "cooloff_minutes": settings.CONSOLE_LOGIN_COOLOFF_MINUTES,
    }
    return render(request, "accounts/lockouts.html", context)


@require_POST
@role_required(roles.ADMIN)
def unlock_view(request: HttpRequest, pk: int) -> HttpResponse:
    attempt = get_object_or_404(AccessAttempt, pk=pk)
    logins.unlock(attempt, by=request.user)
    messages.success(
        request, f"Unlocked {attempt.username or '(no username)'} from {attempt.ip_address}."
    )
    return redirect("audit:lockouts")
