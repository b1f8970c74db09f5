"""The single sign-on backend (mozilla-django-oidc, authorization code flow with PKCE).

A user is the value of the ``OIDC_USERNAME_CLAIM`` claim (default ``sub``, which an
identity provider never reassigns), created on the first login. Roles come from the
``OIDC_ROLES_CLAIM`` claim through ``OIDC_ROLE_MAP`` and are set again at every login:
a role the provider no longer grants is taken away. Each creation, role granted and
role revoked is an audit entry. A local (password) account is never taken over.
"""

from __future__ import annotations

import logging
from typing import Any

import jwt
import requests
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.exceptions import SuspiciousOperation
from django.db import IntegrityError, transaction
from django.http import HttpRequest
from django.utils.translation import gettext_lazy as _
from mozilla_django_oidc.auth import OIDCAuthenticationBackend

from beeos_console.accounts import sso
from beeos_console.accounts.backends import ConsoleModelBackend
from beeos_console.auditlog.services import Actor, record
from beeos_console.core import roles

logger = logging.getLogger(__name__)

USERNAME_MAX = 150  # auth.User.username
# The identity provider acting through a login (audit actor of creations and role changes).
SSO_ACTOR = Actor.system("sso")


class SSOLoginRefused(Exception):
    """A single sign-on that must not log anyone in: ``status`` and a message for the
    person (translated), ``reason`` for the audit log (English, not translated)."""

    def __init__(self, status: int, message: Any, reason: str, username: str = "") -> None:
        super().__init__(reason)
        self.status = status
        self.message = message
        self.reason = reason
        self.username = username


class ConsoleOIDCBackend(OIDCAuthenticationBackend):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # Not the library's __init__: that one requires every endpoint as a setting,
        # and this backend is built for every request of a signed-in user. Endpoints
        # are looked up (maybe discovered) only when a callback is handled.
        self.UserModel = get_user_model()
        self.OIDC_RP_CLIENT_ID = getattr(settings, "OIDC_RP_CLIENT_ID", "")
        self.OIDC_RP_CLIENT_SECRET = getattr(settings, "OIDC_RP_CLIENT_SECRET", "")
        self.OIDC_RP_SIGN_ALGO = getattr(settings, "OIDC_RP_SIGN_ALGO", "RS256")
        self.OIDC_RP_IDP_SIGN_KEY = getattr(settings, "OIDC_RP_IDP_SIGN_KEY", None)
        self.OIDC_OP_TOKEN_ENDPOINT = self.OIDC_OP_USER_ENDPOINT = ""
        self.OIDC_OP_JWKS_ENDPOINT = None
        self.issuer = ""

    # --- the callback ---------------------------------------------------------------

    def authenticate(self, request: HttpRequest | None, **kwargs: Any) -> Any:
        # Only the callback view passes a nonce: a password login never reaches the
        # identity provider.
        if request is None or "nonce" not in kwargs or not sso.enabled():
            return None
        try:
            found = sso.provider()
        except sso.ProviderUnavailable as exc:
            raise SSOLoginRefused(
                502, _("The identity provider could not be reached."), str(exc)
            ) from exc
        self.issuer = found.issuer
        self.OIDC_OP_TOKEN_ENDPOINT = found.token_endpoint
        self.OIDC_OP_USER_ENDPOINT = found.userinfo_endpoint
        self.OIDC_OP_JWKS_ENDPOINT = found.jwks_endpoint
        try:
            user = super().authenticate(request, **kwargs)
        except requests.HTTPError as exc:
            status = exc.response.status_code if exc.response is not None else 502
            if 400 <= status < 500:
                raise SSOLoginRefused(
                    400,
                    _("The identity provider refused this sign-in. Start again."),
                    f"the identity provider answered {status}: {_error_of(exc.response)}",
                ) from exc
            raise SSOLoginRefused(
                502, _("The identity provider could not be reached."), str(exc)
            ) from exc
        except requests.RequestException as exc:
            raise SSOLoginRefused(
                502, _("The identity provider could not be reached."), str(exc)
            ) from exc
        except (SuspiciousOperation, jwt.PyJWTError) as exc:
            raise SSOLoginRefused(
                400,
                _("The identity provider's answer could not be verified. Start again."),
                f"ID token refused: {exc}",
            ) from exc
        if user is None:
            raise SSOLoginRefused(
                403,
                _("The identity provider's answer did not name a user."),
                "no user in the identity provider's answer",
            )
        return user

    def get_user(self, user_id: Any) -> Any:
        # ModelBackend's: an inactive user's session ends (the library's would keep it);
        # the roles are read in the same query (``accounts.backends``).
        return ConsoleModelBackend.get_user(self, user_id)

    def verify_token(self, token: str, **kwargs: Any) -> dict[str, Any]:
        """The library checks the signature and the nonce; the issuer and audience are
        checked here too (OpenID Connect Core 3.1.3.7)."""
        payload = super().verify_token(token, **kwargs)
        if self.issuer and payload.get("iss") != self.issuer:
            raise SuspiciousOperation(f"ID token from another issuer: {payload.get('iss')!r}")
        audience = payload.get("aud")
        audiences = audience if isinstance(audience, list) else [audience]
        if self.OIDC_RP_CLIENT_ID not in audiences:
            raise SuspiciousOperation("ID token for another client")
        if len(audiences) > 1 and payload.get("azp") != self.OIDC_RP_CLIENT_ID:
            raise SuspiciousOperation("ID token authorized for another client")
        return payload

    def get_userinfo(self, access_token: str, id_token: str, payload: dict[str, Any]) -> Any:
        """The ID token's claims, completed by the userinfo endpoint's (some providers
        put groups in one of them only). Both must be about the same ``sub``."""
        claims = dict(payload)
        if self.OIDC_OP_USER_ENDPOINT:
            userinfo = super().get_userinfo(access_token, id_token, payload)
            if not isinstance(userinfo, dict) or userinfo.get("sub") != payload.get("sub"):
                raise SuspiciousOperation("userinfo is about another subject")
            claims.update(userinfo)
        return claims

    # --- claims -> user ---------------------------------------------------------------

    def username_of(self, claims: dict[str, Any]) -> str:
        value = claims.get(settings.OIDC_USERNAME_CLAIM)
        if isinstance(value, int) and not isinstance(value, bool):
            value = str(value)
        if not isinstance(value, str) or not value.strip() or len(value) > USERNAME_MAX:
            raise SSOLoginRefused(
                403,
                _("The identity provider did not send a usable user name."),
                f"no usable {settings.OIDC_USERNAME_CLAIM!r} claim",
            )
        return value

    def verify_claims(self, claims: dict[str, Any]) -> bool:
        self.username_of(claims)  # refuses with a clear reason
        return True

    def filter_users_by_claims(self, claims: dict[str, Any]) -> Any:
        return self.UserModel.objects.filter(username=self.username_of(claims))

    def get_or_create_user(self, access_token: str, id_token: str, payload: dict[str, Any]) -> Any:
        try:
            with transaction.atomic():
                return super().get_or_create_user(access_token, id_token, payload)
        except IntegrityError:
            # Two first logins of one person at once: the other one created the user.
            with transaction.atomic():
                return super().get_or_create_user(access_token, id_token, payload)

    def create_user(self, claims: dict[str, Any]) -> Any:
        username = self.username_of(claims)
        user = self.UserModel.objects.create_user(username)  # no usable password
        self._copy_profile(user, claims)
        record(
            SSO_ACTOR,
            "user.created",
            "user",
            username,
            reason="first single sign-on",
            detail=self._source(claims),
        )
        sync_roles(user, sso.roles_from_claims(claims), self._source(claims))
        return user

    def update_user(self, user: Any, claims: dict[str, Any]) -> Any:
        if user.has_usable_password():
            raise SSOLoginRefused(
                403,
                _(
                    "A console account with a password already has this name. Single "
                    "sign-on does not take over password accounts: ask an admin."
                ),
                "a password account has this user name",
                username=user.get_username(),
            )
        self._copy_profile(user, claims)
        sync_roles(user, sso.roles_from_claims(claims), self._source(claims))
        return user

    def _copy_profile(self, user: Any, claims: dict[str, Any]) -> None:
        fields = {
            "email": claims.get("email"),
            "first_name": claims.get("given_name"),
            "last_name": claims.get("family_name"),
        }
        changed = []
        for field, value in fields.items():
            limit = user._meta.get_field(field).max_length
            if isinstance(value, str) and value[:limit] != getattr(user, field):
                setattr(user, field, value[:limit])
                changed.append(field)
        if changed:
            user.save(update_fields=changed)

    def _source(self, claims: dict[str, Any]) -> dict[str, Any]:
        return {
            "method": "sso",
            "issuer": self.issuer or claims.get("iss", ""),
            "sub": claims.get("sub", ""),
            "roles_claim": settings.OIDC_ROLES_CLAIM,
            "claim_values": sso.claim_values(claims.get(settings.OIDC_ROLES_CLAIM))[:100],
        }


def _error_of(response: Any) -> str:
    try:
        body = response.json()
    except ValueError:
        return ""
    return str(body.get("error", "")) if isinstance(body, dict) else ""


def sync_roles(user: Any, wanted: set[str], source: dict[str, Any]) -> None:
    """Give the user exactly the ``wanted`` console roles (of those SSO manages): one
    audit entry per role granted or revoked, each with the roles before and after."""
    held = set(user.groups.filter(name__in=sso.SSO_ROLES).values_list("name", flat=True))
    granted = sorted(wanted - held)
    revoked = sorted(held - wanted)
    if not granted and not revoked:
        return
    if granted:
        user.groups.add(*(Group.objects.get_or_create(name=role)[0] for role in granted))
    if revoked:
        user.groups.remove(*Group.objects.filter(name__in=revoked))
    roles.forget_roles(user)  # core.roles keeps them on the object
    before = {"roles": sorted(held)}
    after = {"roles": sorted(wanted)}
    claim = source["roles_claim"]
    changes = [
        ("user.role_granted", role, f"the {claim!r} claim grants {role}") for role in granted
    ]
    changes += [
        ("user.role_revoked", role, f"the {claim!r} claim no longer grants {role}")
        for role in revoked
    ]
    for action, role, reason in changes:
        record(
            SSO_ACTOR,
            action,
            "user",
            user.get_username(),
            before=before,
            after=after,
            reason=reason,
            detail={**source, "role": role},
        )
