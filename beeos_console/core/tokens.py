"""API tokens: issue (shown once), look up by hash, authenticate DRF requests."""

from __future__ import annotations

import hashlib
import secrets
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import authentication, exceptions

from beeos_console.core.models import ApiToken

KEY_PREFIX = "bco_"  # "BeeOS console": recognisable in logs and secret scanners
# last_used_at moves at most this often per token: not a write per API request.
LAST_USED_GRANULARITY = timedelta(minutes=1)


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def lifetime() -> timedelta:
    return timedelta(days=settings.CONSOLE_API_TOKEN_DAYS)


def issue(user: Any, name: str = "", *, days: int | None = None) -> tuple[ApiToken, str]:
    """Create a token valid for ``days`` (default ``CONSOLE_API_TOKEN_DAYS``); returns
    it and the plain key (never stored)."""
    key = KEY_PREFIX + secrets.token_urlsafe(32)
    valid_for = lifetime() if days is None else timedelta(days=days)
    token = ApiToken.objects.create(
        user=user,
        name=name,
        prefix=key[: len(KEY_PREFIX) + 6],
        key_hash=hash_key(key),
        expires_at=timezone.now() + valid_for,
    )
    return token, key


def touch(token: ApiToken) -> None:
    """Record a use: one UPDATE a minute per token at most (and none in between)."""
    now = timezone.now()
    if token.last_used_at is not None and now - token.last_used_at < LAST_USED_GRANULARITY:
        return
    ApiToken.objects.filter(pk=token.pk).filter(
        Q(last_used_at__isnull=True) | Q(last_used_at__lt=now - LAST_USED_GRANULARITY)
    ).update(last_used_at=now)
    token.last_used_at = now


def revoke(token: ApiToken) -> None:
    token.revoked_at = timezone.now()
    token.save(update_fields=["revoked_at"])


class ApiTokenAuthentication(authentication.BaseAuthentication):
    """``Authorization: Bearer bco_…`` (or ``Token bco_…``)."""

    keywords = ("bearer", "token")

    def authenticate(self, request: Any) -> tuple[Any, ApiToken] | None:
        header = authentication.get_authorization_header(request).split()
        if not header or header[0].lower().decode() not in self.keywords:
            return None
        if len(header) != 2:
            raise exceptions.AuthenticationFailed(
                gettext("Authorization header must be 'Bearer <token>'.")
            )
        try:
            key = header[1].decode()
        except UnicodeError as exc:
            raise exceptions.AuthenticationFailed(gettext("Token is not valid text.")) from exc
        token = (
            ApiToken.objects.select_related("user")
            .filter(key_hash=hash_key(key), revoked_at__isnull=True)
            .first()
        )
        if token is None or not token.user.is_active:
            raise exceptions.AuthenticationFailed(gettext("Unknown or revoked API token."))
        if token.expires_at <= timezone.now():
            raise exceptions.AuthenticationFailed(
                {
                    "detail": gettext(
                        "API token %(prefix)s… expired at %(expired_at)s; "
                        "ask an admin for a new one."
                    )
                    % {
                        "prefix": token.prefix,
                        "expired_at": token.expires_at.isoformat(timespec="seconds"),
                    },
                    "code": "token_expired",
                    "expired_at": token.expires_at.isoformat(timespec="seconds"),
                }
            )
        touch(token)
        return token.user, token

    def authenticate_header(self, request: Any) -> str:
        return 'Bearer realm="api"'


class ApiTokenScheme(OpenApiAuthenticationExtension):
    """Documents the token scheme in /api/schema/."""

    target_class = "beeos_console.core.tokens.ApiTokenAuthentication"
    name = "apiToken"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        return {"type": "http", "scheme": "bearer", "description": "`manage.py create_api_token`"}
