"""API tokens: issue (shown once), look up by hash, authenticate DRF requests."""

from __future__ import annotations

import hashlib
import secrets
from typing import Any

from django.utils import timezone
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import authentication, exceptions

from beeos_console.core.models import ApiToken

KEY_PREFIX = "bco_"  # "BeeOS console": recognisable in logs and secret scanners


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def issue(user: Any, name: str = "") -> tuple[ApiToken, str]:
    """Create a token; returns it and the plain key (never stored)."""
    key = KEY_PREFIX + secrets.token_urlsafe(32)
    token = ApiToken.objects.create(
        user=user, name=name, prefix=key[: len(KEY_PREFIX) + 6], key_hash=hash_key(key)
    )
    return token, key


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
            raise exceptions.AuthenticationFailed("Authorization header must be 'Bearer <token>'.")
        try:
            key = header[1].decode()
        except UnicodeError as exc:
            raise exceptions.AuthenticationFailed("Token is not valid text.") from exc
        token = (
            ApiToken.objects.select_related("user")
            .filter(key_hash=hash_key(key), revoked_at__isnull=True)
            .first()
        )
        if token is None or not token.user.is_active:
            raise exceptions.AuthenticationFailed("Unknown or revoked API token.")
        return token.user, token

    def authenticate_header(self, request: Any) -> str:
        return 'Bearer realm="api"'


class ApiTokenScheme(OpenApiAuthenticationExtension):
    """Documents the token scheme in /api/schema/."""

    target_class = "beeos_console.core.tokens.ApiTokenAuthentication"
    name = "apiToken"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        return {"type": "http", "scheme": "bearer", "description": "`manage.py create_api_token`"}
