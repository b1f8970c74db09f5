"""Single sign-on configuration: whether it is on, the identity provider's endpoints
(from the settings, or discovered from ``OIDC_OP_ISSUER``), and the claim -> role map.

Everything is read from the settings at call time (tests switch SSO on per test).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import requests
from django.conf import settings
from django.http import HttpRequest
from django.urls import reverse

from beeos_console.core import roles

# The authentication backend's dotted path: stored in the session of an SSO login.
SSO_BACKEND = "beeos_console.accounts.oidc.ConsoleOIDCBackend"
# The roles an identity provider may grant; anything else on a user is left alone.
SSO_ROLES = (roles.SUPPORT, roles.OPERATOR, roles.ADMIN)
# The discovery document is fetched again after this long (keys and endpoints rotate).
DISCOVERY_TTL_SECONDS = 3600


class ProviderUnavailable(Exception):
    """The identity provider's discovery document could not be read."""


@dataclass(frozen=True, slots=True)
class Provider:
    issuer: str
    authorization_endpoint: str
    token_endpoint: str
    userinfo_endpoint: str
    jwks_endpoint: str
    end_session_endpoint: str


def enabled() -> bool:
    return bool(getattr(settings, "OIDC_RP_CLIENT_ID", ""))


def password_login_enabled() -> bool:
    return bool(getattr(settings, "CONSOLE_PASSWORD_LOGIN", True))


def provider_name() -> str:
    return str(getattr(settings, "OIDC_PROVIDER_NAME", "") or "SSO")


_discovered: dict[str, tuple[float, dict[str, Any]]] = {}
_discovery_lock = threading.Lock()


def _discover(issuer: str) -> dict[str, Any]:
    now = time.monotonic()
    with _discovery_lock:
        cached = _discovered.get(issuer)
    if cached and now - cached[0] < DISCOVERY_TTL_SECONDS:
        return cached[1]
    url = issuer.rstrip("/") + "/.well-known/openid-configuration"
    try:
        answer = requests.get(
            url, timeout=settings.OIDC_TIMEOUT, verify=getattr(settings, "OIDC_VERIFY_SSL", True)
        )
        answer.raise_for_status()
        document = answer.json()
    except (requests.RequestException, ValueError) as exc:
        raise ProviderUnavailable(f"{url}: {exc}") from exc
    # OpenID Connect Discovery 4.3: the document must name the issuer we asked.
    if not isinstance(document, dict) or document.get("issuer") != issuer:
        raise ProviderUnavailable(f"{url} names another issuer: {document.get('issuer')!r}")
    with _discovery_lock:
        _discovered[issuer] = (now, document)
    return document


def provider() -> Provider:
    """The endpoints: each explicit ``OIDC_OP_*_ENDPOINT`` setting wins over discovery."""
    issuer = getattr(settings, "OIDC_OP_ISSUER", "")
    explicit = {
        "authorization_endpoint": getattr(settings, "OIDC_OP_AUTHORIZATION_ENDPOINT", ""),
        "token_endpoint": getattr(settings, "OIDC_OP_TOKEN_ENDPOINT", ""),
        "userinfo_endpoint": getattr(settings, "OIDC_OP_USER_ENDPOINT", ""),
        "jwks_uri": getattr(settings, "OIDC_OP_JWKS_ENDPOINT", ""),
        "end_session_endpoint": getattr(settings, "OIDC_OP_LOGOUT_ENDPOINT", ""),
    }
    needed = ("authorization_endpoint", "token_endpoint", "jwks_uri")
    document: dict[str, Any] = {}
    if issuer and not all(explicit[key] for key in (*needed, "end_session_endpoint")):
        document = _discover(issuer)

    def pick(key: str) -> str:
        return str(explicit[key] or document.get(key) or "")

    found = Provider(
        issuer=issuer,
        authorization_endpoint=pick("authorization_endpoint"),
        token_endpoint=pick("token_endpoint"),
        userinfo_endpoint=pick("userinfo_endpoint"),
        jwks_endpoint=pick("jwks_uri"),
        end_session_endpoint=pick("end_session_endpoint"),
    )
    missing = [key for key in needed if not pick(key)]
    if missing:
        raise ProviderUnavailable(f"the identity provider names no {', '.join(missing)}")
    return found


def end_session_url(request: HttpRequest, id_token: str) -> str:
    """RP-initiated logout: where to send the browser so the provider's session ends
    too, coming back to the login page. Empty when the provider has no such endpoint."""
    try:
        endpoint = provider().end_session_endpoint
    except ProviderUnavailable:
        return ""
    if not endpoint:
        return ""
    query = urlencode(
        {
            "id_token_hint": id_token,
            "post_logout_redirect_uri": request.build_absolute_uri(reverse("login")),
            "client_id": settings.OIDC_RP_CLIENT_ID,
        }
    )
    return f"{endpoint}{'&' if '?' in endpoint else '?'}{query}"


def claim_values(value: Any) -> list[str]:
    """A roles claim as a list of strings: a JSON array, or one string."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, (list, tuple)):
        return [item for item in value if isinstance(item, str)]
    return []


def roles_from_claims(claims: dict[str, Any]) -> set[str]:
    """The console roles the ``OIDC_ROLES_CLAIM`` values map to (unmapped values: none)."""
    role_map: dict[str, str] = getattr(settings, "OIDC_ROLE_MAP", {})
    values = claim_values(claims.get(settings.OIDC_ROLES_CLAIM))
    return {role_map[value] for value in values if value in role_map}
