"""``manage.py check``: a metrics token too short to keep a scraper's secret is refused."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.checks import Error, register

MIN_TOKEN_LENGTH = 32


@register()
def metrics_token_length(app_configs: Any = None, **kwargs: Any) -> list[Error]:
    token = getattr(settings, "METRICS_TOKEN", "")
    if token and len(token) < MIN_TOKEN_LENGTH:
        return [
            Error(
                f"METRICS_TOKEN is {len(token)} characters; use at least {MIN_TOKEN_LENGTH} "
                "(e.g. python -c 'import secrets; print(secrets.token_urlsafe(32))').",
                id="console_metrics.E001",
            )
        ]
    return []
