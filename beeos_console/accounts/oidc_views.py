"""The single sign-on pages: start (to the identity provider with state, nonce and a
PKCE challenge) and callback (code -> tokens -> user, roles synced). Every refusal is
a page saying what happened, with a 4xx status (502 when the provider is unreachable),
and a ``login.failed`` audit entry."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth.decorators import login_not_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.decorators import method_decorator
from django.utils.translation import gettext as _
from django.views.generic import View
from mozilla_django_oidc.views import (
    OIDCAuthenticationCallbackView,
    OIDCAuthenticationRequestView,
)

from beeos_console.accounts import sso
from beeos_console.accounts.logins import client_detail
from beeos_console.accounts.oidc import USERNAME_MAX, SSOLoginRefused
from beeos_console.auditlog.services import Actor, record
from beeos_console.core.redirects import is_safe_target

REASON_MAX = 500
ERROR_MAX = 64  # the provider's error code shown on the page (RFC 6749: a short ASCII code)


def refused(
    request: HttpRequest, status: int, message: Any, reason: str, username: str = ""
) -> HttpResponse:
    """The page of a single sign-on that logged nobody in, audited as ``login.failed``."""
    record(
        Actor(name=username[:USERNAME_MAX]),
        "login.failed",
        "user",
        username,
        reason=reason[:REASON_MAX],
        detail={**client_detail(request), "method": "sso", "status": status},
    )
    context = {"message": message, "sso_provider_name": sso.provider_name()}
    return render(request, "registration/sso_failed.html", context, status=status)


@method_decorator(login_not_required, name="dispatch")
class SSOStartView(OIDCAuthenticationRequestView):
    def __init__(self, **kwargs: Any) -> None:
        # Not the library's __init__: it wants the endpoint as a setting; it may be
        # discovered from the issuer instead (sso.provider()).
        View.__init__(self, **kwargs)

    def get(self, request: HttpRequest) -> HttpResponse:
        if not sso.enabled():
            raise Http404("Single sign-on is not configured.")
        try:
            found = sso.provider()
        except sso.ProviderUnavailable as exc:
            return refused(request, 502, _("The identity provider could not be reached."), str(exc))
        self.OIDC_OP_AUTH_ENDPOINT = found.authorization_endpoint
        self.OIDC_RP_CLIENT_ID = settings.OIDC_RP_CLIENT_ID
        response = super().get(request)
        # Where to go after the login: this console only (core.redirects).
        target = request.GET.get("next")
        request.session["oidc_login_next"] = target if is_safe_target(request, target) else None
        return response


@method_decorator(login_not_required, name="dispatch")
class SSOCallbackView(OIDCAuthenticationCallbackView):
    def get(self, request: HttpRequest) -> HttpResponse:
        if not sso.enabled():
            raise Http404("Single sign-on is not configured.")
        state = request.GET.get("state", "")
        states = request.session.get("oidc_states") or {}
        error = request.GET.get("error", "")[:ERROR_MAX]
        if error:
            if state in states:  # never usable again
                del states[state]
                request.session.modified = True
            description = request.GET.get("error_description", "")
            return refused(
                request,
                403,
                _("The identity provider did not sign you in (%(error)s).") % {"error": error},
                f"the identity provider answered {error}: {description}",
            )
        if not request.GET.get("code") or not state:
            return refused(
                request,
                400,
                _("This sign-in answer is incomplete. Start again."),
                "callback without a code or a state",
            )
        if state not in states:
            return refused(
                request,
                400,
                _(
                    "This sign-in answer does not belong to a sign-in started in this "
                    "browser, or it was used already. Start again."
                ),
                "state mismatch: no sign-in with this state was started in this session",
            )
        try:
            return super().get(request)
        except SSOLoginRefused as exc:
            return refused(request, exc.status, exc.message, exc.reason, exc.username)

    def login_failure(self) -> HttpResponse:
        # The backend raises for every other refusal: this is an inactive account.
        user = getattr(self, "user", None)
        return refused(
            self.request,
            403,
            _("This console account is disabled. Ask an admin."),
            "the account is inactive",
            user.get_username() if user is not None else "",
        )
