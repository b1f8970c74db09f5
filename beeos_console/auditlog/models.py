"""The audit log: append-only, one entry per thing anybody did."""

from __future__ import annotations

from typing import Any

from django.db import models
from django.utils.translation import gettext_lazy as _

# Every console table keeps the historical app label "console" (its migrations
# live in beeos_console/core/migrations), whichever package defines the model.


class AppendOnlyError(Exception):
    """Raised on any attempt to change or remove an audit entry."""


class AuditEntryQuerySet(models.QuerySet):
    def update(self, **kwargs: Any) -> int:
        raise AppendOnlyError("Audit entries are append-only: they cannot be updated.")

    def delete(self) -> tuple[int, dict[str, int]]:
        raise AppendOnlyError("Audit entries are append-only: they cannot be deleted.")


class AuditEntry(models.Model):
    """Who did what to which object, with the state before and after.

    ``actor`` is a snapshot of the username (or feeder / system name), not a
    foreign key, so removing a user never rewrites history.
    """

    class ActorKind(models.TextChoices):
        USER = "user", _("User")
        FEEDER = "feeder", _("Feeder")
        SYSTEM = "system", _("System")

    at = models.DateTimeField(auto_now_add=True, db_index=True)
    actor = models.CharField(max_length=150)
    actor_kind = models.CharField(max_length=16, choices=ActorKind.choices, default=ActorKind.USER)
    action = models.CharField(max_length=64)
    object_kind = models.CharField(max_length=32)
    object_id = models.CharField(max_length=256)
    before = models.JSONField(default=dict, blank=True)
    after = models.JSONField(default=dict, blank=True)
    reason = models.TextField(blank=True)
    detail = models.JSONField(default=dict, blank=True)
    # The hash chain, filled in by the database on INSERT (trigger ``console_audit_chain``):
    # ``seq`` counts entries without gaps, ``digest`` covers this entry's content and
    # the previous entry's digest. ``manage.py verify_audit_log`` walks it.
    seq = models.BigIntegerField(null=True, blank=True, unique=True, editable=False)
    prev_digest = models.CharField(max_length=64, blank=True, editable=False)
    digest = models.CharField(max_length=64, blank=True, editable=False)

    objects = AuditEntryQuerySet.as_manager()

    class Meta:
        app_label = "console"
        ordering = ["-at", "-id"]
        verbose_name_plural = "audit entries"
        indexes = [
            models.Index(fields=["object_kind", "object_id", "-at"], name="audit_object_idx"),
            models.Index(fields=["actor", "-at"], name="audit_actor_idx"),
            models.Index(fields=["action", "-at"], name="audit_action_idx"),
        ]

    def __str__(self) -> str:
        when = f"{self.at:%Y-%m-%d %H:%M:%S}"
        return f"{when} {self.actor} {self.action} {self.object_kind}/{self.object_id}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        if not self._state.adding:
            raise AppendOnlyError("Audit entries are append-only: they cannot be updated.")
        super().save(*args, **kwargs)

    def delete(self, *args: Any, **kwargs: Any) -> tuple[int, dict[str, int]]:
        raise AppendOnlyError("Audit entries are append-only: they cannot be deleted.")

    @property
    def before_raw(self) -> str:
        """The raw state before, whichever vocabulary the object uses."""
        return self.before.get("raw_state") or self.before.get("raw_status") or ""

    @property
    def after_raw(self) -> str:
        return self.after.get("raw_state") or self.after.get("raw_status") or ""
