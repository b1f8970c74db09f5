"""Redirect targets a request names (``next``): only ever this console's own URLs."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from django.shortcuts import resolve_url
from django.utils.http import url_has_allowed_host_and_scheme


def is_safe_target(request: HttpRequest, target: str | None) -> bool:
    """True for a path or URL on this host (https-only when the request is), never a
    foreign host, a scheme-relative ``//host`` or a ``javascript:`` URL."""
    return bool(target) and url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    )


def safe_next(request: HttpRequest, target: str | None, fallback: Any, *args: Any) -> str:
    """``target`` when it is safe, else ``fallback`` (a URL name, path or model, with
    ``args`` as for ``resolve_url``)."""
    if target and is_safe_target(request, target):
        return target
    return resolve_url(fallback, *args)
