"""The password backend when ``CONSOLE_PASSWORD_LOGIN=0``: Django's ModelBackend for
sessions and permissions, but no password is ever accepted (single sign-on only)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.backends import ModelBackend
from django.http import HttpRequest


class PasswordLoginOffBackend(ModelBackend):
    def authenticate(
        self,
        request: HttpRequest | None,
        username: str | None = None,
        password: str | None = None,
        **kwargs: Any,
    ) -> None:
        return None
