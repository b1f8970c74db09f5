"""Where the pull sync resumes from, and the webhook inbox."""

from __future__ import annotations

from django.db import models
from django.db.models.functions import Now
from django.utils.translation import gettext_lazy as _

ID_MAX = 256  # as every mirrored id (the A2A limit)

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


class WebhookInboxEvent(models.Model):
    """One verified BeeOS webhook event, stored as received and applied later in batches.

    The receiver writes a row with one ``INSERT … ON CONFLICT (dedup_key) DO NOTHING``
    and acknowledges; ``upstream.inbox`` claims queued rows in received order
    (``id``) and applies them through the set-based write path. A row is never
    deleted by the console: an event that cannot be applied stays ``failed`` with
    its error, for an admin to read and retry (``/webhooks/``).
    """

    class Status(models.TextChoices):
        QUEUED = "queued", _("queued")
        APPLIED = "applied", _("applied")
        FAILED = "failed", _("failed")

    class Kind(models.TextChoices):
        TASK_STATUS = "task_status", _("task status (TaskEvent)")
        A2A_PUSH = "a2a_push", _("A2A task push")

    class Scheme(models.TextChoices):
        TASK_PUSH = "task_push", _("X-BeeOS-Signature (task push)")
        DEVELOPER = "developer", _("X-BeeOS-Webhook-Signature (developer webhook)")

    # The id is the received order: events are claimed and applied in it.
    received_at = models.DateTimeField(db_default=Now())
    # The guide's key (task_id, status, timestamp), hashed to 16 bytes: a small unique index.
    dedup_key = models.UUIDField(unique=True)
    kind = models.CharField(max_length=16, choices=Kind.choices)
    scheme = models.CharField(max_length=16, choices=Scheme.choices)
    # The object the event is about: events of one object apply in received order.
    protocol = models.CharField(max_length=16)
    task_id = models.CharField(max_length=ID_MAX)
    event_status = models.CharField(max_length=64)
    event_timestamp = models.DateTimeField(null=True, blank=True)
    payload = models.JSONField()
    status = models.CharField(
        max_length=16, choices=Status.choices, default=Status.QUEUED, db_default=Status.QUEUED
    )
    # Committed apply attempts (a killed worker's attempt rolls back and does not count).
    attempts = models.PositiveIntegerField(default=0, db_default=0)
    # What the write path made of it (created, updated, stale, unchanged), or the error.
    result = models.CharField(max_length=16, blank=True, default="", db_default="")
    error = models.TextField(blank=True, default="", db_default="")
    applied_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        app_label = "console"
        indexes = [
            # The claim: queued rows in received order (small: applied rows leave it).
            models.Index(
                fields=["id"],
                name="webhook_inbox_queued_idx",
                condition=models.Q(status="queued"),
            ),
            # In order per object: is an earlier event of this object still queued?
            models.Index(
                fields=["protocol", "task_id", "id"],
                name="webhook_inbox_object_idx",
                condition=models.Q(status="queued"),
            ),
            # The admin list: newest first (applied rows, the bulk, are read through it);
            # failed ones, the list an admin comes for, have their own small index.
            models.Index(fields=["-received_at", "-id"], name="webhook_inbox_received_idx"),
            models.Index(
                fields=["-received_at", "-id"],
                name="webhook_inbox_failed_idx",
                condition=models.Q(status="failed"),
            ),
        ]

    def __str__(self) -> str:
        return f"webhook {self.pk} {self.kind} {self.task_id} {self.event_status}"
