"""``manage.py check --deploy``: single sign-on only over HTTPS (codes, tokens and the
ID token hint travel in these URLs)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.checks import CheckMessage, Tags, Warning, register

from beeos_console.accounts import sso

URL_SETTINGS = (
    "OIDC_OP_ISSUER",
    "OIDC_OP_AUTHORIZATION_ENDPOINT",
    "OIDC_OP_TOKEN_ENDPOINT",
    "OIDC_OP_USER_ENDPOINT",
    "OIDC_OP_JWKS_ENDPOINT",
    "OIDC_OP_LOGOUT_ENDPOINT",
)


@register(Tags.security, deploy=True)
def sso_over_https(app_configs: Any, **kwargs: Any) -> list[CheckMessage]:
    if not sso.enabled():
        return []
    plain = [name for name in URL_SETTINGS if getattr(settings, name, "").startswith("http:")]
    if not plain:
        return []
    return [
        Warning(
            f"Single sign-on over plain HTTP: {', '.join(plain)}.",
            hint="Use the identity provider's https:// URLs.",
            id="console_accounts.W001",
        )
    ]
