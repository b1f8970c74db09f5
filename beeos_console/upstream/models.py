"""Where the pull sync resumes from."""

from __future__ import annotations

from django.db import models

# Every console table keeps the historical app label "console" (its migrations
# live in beeos_console/core/migrations), whichever package defines the model.


class SyncCursor(models.Model):
    """Where ``sync_beeos`` left off, per stream (e.g. ``tasks``): it resumes here."""

    name = models.CharField(max_length=128, unique=True)
    value = models.CharField(max_length=256, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        app_label = "console"

    def __str__(self) -> str:
        return f"{self.name} @ {self.value or 'start'}"
