"""The login and logout pages (their ``next`` checked by core's one helper), with
single sign-on beside or instead of passwords, and the admins' lockout page."""

from __future__ import annotations

from typing import Any

from axes.helpers import get_client_username
from axes.models import AccessAttempt
from django.conf import settings
from django.contrib import admin, messages
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_not_required
from django.contrib.auth.views import redirect_to_login
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.translation import gettext
from django.views.decorators.http import require_GET, require_POST

from beeos_console.accounts import logins, sso
from beeos_console.auditlog.services import Actor, record
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

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context = super().get_context_data(**kwargs)
        context.update(
            sso_enabled=sso.enabled(),
            sso_provider_name=sso.provider_name(),
            password_login=sso.password_login_enabled(),
        )
        return context

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if sso.password_login_enabled():
            return super().post(request, *args, **kwargs)
        # CONSOLE_PASSWORD_LOGIN=0: no password is even checked (single sign-on only).
        username = str(request.POST.get("username", ""))[: logins.ACTOR_MAX]
        record(
            Actor(name=username),
            "login.failed",
            "user",
            username,
            reason="password login is switched off (CONSOLE_PASSWORD_LOGIN=0)",
            detail={**logins.client_detail(request), "method": "password"},
        )
        context = self.get_context_data(password_refused=True)
        return self.render_to_response(context, status=403)


class LogoutView(SafeNextMixin, auth_views.LogoutView):
    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        # RP-initiated logout: after a single sign-on, the identity provider's session
        # ends too (it sends the browser back to the login page).
        id_token = request.session.get("oidc_id_token") if sso.enabled() else None
        provider_logout = sso.end_session_url(request, id_token) if id_token else ""
        request.console_provider_logout = bool(provider_logout)  # for the audit entry
        response = super().post(request, *args, **kwargs)
        return HttpResponseRedirect(provider_logout) if provider_logout else response


@login_not_required
def admin_login(request: HttpRequest) -> HttpResponse:
    """The Django admin's login: its password form, or the console's login page when
    password login is switched off."""
    if sso.password_login_enabled():
        return admin.site.login(request)
    return redirect_to_login(request.GET.get("next") or reverse("admin:index"))


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
        request,
        gettext("Unlocked %(user)s from %(address)s.")
        % {"user": attempt.username or gettext("(no username)"), "address": attempt.ip_address},
    )
    return redirect("audit:lockouts")
