"""API tokens: only their SHA-256 is stored."""

from __future__ import annotations

from django.db import models

# Every console table keeps the historical app label "console" (its migrations
# live in beeos_console/core/migrations), whichever package defines the model.


class ApiToken(models.Model):
    """A script's credential for the REST API. Only a SHA-256 of the key is stored.

    The key is shown once, by ``manage.py create_api_token``; ``prefix`` (its
    first characters) lets people tell their tokens apart. A token expires
    ``CONSOLE_API_TOKEN_DAYS`` after it is issued.
    """

    user = models.ForeignKey("auth.User", on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=100, blank=True)
    prefix = models.CharField(max_length=12)
    key_hash = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    # Refused from then on (401, "expired"); CONSOLE_API_TOKEN_DAYS after issue.
    expires_at = models.DateTimeField()
    # When the token last authenticated a request (moved at most once a minute).
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        app_label = "console"

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.user})"
