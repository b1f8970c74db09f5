"""The audit log: append-only, one entry per thing anybody did."""

from __future__ import annotations

from typing import Any

from django.db import models


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
        USER = "user", "User"
        FEEDER = "feeder", "Feeder"
        SYSTEM = "system", "System"

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

    objects = AuditEntryQuerySet.as_manager()

    class Meta:
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


class Projected(models.Model):
    """The product projection stored next to a mirrored row's raw values.

    Computed on write by the row's service from ``states.project`` and never
    edited by hand; ``projection_rule`` names the table row that decided it.
    """

    status = models.CharField(max_length=16)
    reason = models.CharField(max_length=64, blank=True)
    outcome_certainty = models.CharField(max_length=16)
    retry_policy = models.CharField(max_length=16)
    projection_rule = models.CharField(max_length=96)
    projection_version = models.PositiveSmallIntegerField()

    class Meta:
        abstract = True

    def projection_drift(self, expected: Any) -> dict[str, tuple[Any, Any]]:
        """Fields whose stored value differs from ``expected`` (a Projection): stored, expected."""
        drift = {}
        for name, value in expected.as_fields().items():
            if name != "projection_version" and getattr(self, name) != value:
                drift[name] = (getattr(self, name), value)
        return drift


class StatusCount(models.Model):
    """Maintained counters: rows per (kind, display status, hour created).

    Written by the services in the same transaction as the row they count, so
    the dashboard and status facets never scan a large table. ``manage.py
    rebuild_counters`` recomputes them from the tables if they ever drift.
    """

    kind = models.CharField(max_length=16)
    status = models.CharField(max_length=32)
    hour = models.DateTimeField()
    count = models.BigIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["kind", "status", "hour"], name="statuscount_uniq"),
        ]
        indexes = [models.Index(fields=["kind", "hour"], name="statuscount_kind_hour_idx")]

    def __str__(self) -> str:
        return f"{self.kind} {self.status} @ {self.hour:%Y-%m-%d %H:00}: {self.count}"


class ApiToken(models.Model):
    """A script's credential for the REST API. Only a SHA-256 of the key is stored.

    The key is shown once, by ``manage.py create_api_token``; ``prefix`` (its
    first characters) lets people tell their tokens apart.
    """

    user = models.ForeignKey("auth.User", on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=100, blank=True)
    prefix = models.CharField(max_length=12)
    key_hash = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.user})"


class SyncCursor(models.Model):
    """Where ``sync_beeos`` left off, per stream (e.g. ``tasks``): it resumes here."""

    name = models.CharField(max_length=128, unique=True)
    value = models.CharField(max_length=256, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"{self.name} @ {self.value or 'start'}"


class CancelRequest(models.Model):
    """One operator's attempt to cancel one task or runtime operation.

    The ``idempotency_key`` makes a double click (or a retried API call) one
    request; the partial unique constraint allows one attempt in flight per
    object, so two operators cancelling at once cause one upstream call.
    """

    class State(models.TextChoices):
        OPEN = "open", "In flight"
        ACCEPTED = "accepted", "Accepted"
        REFUSED = "refused", "Refused"
        NOT_SENT = "not_sent", "Not sent (safe to retry)"
        UNCERTAIN = "uncertain", "Outcome uncertain (not resent)"
        FAILED = "failed", "Failed upstream"

    class Resolution(models.TextChoices):
        """What a re-read showed of an uncertain cancel's object."""

        CANCELLED = "cancelled", "Cancelled"
        COMPLETED = "completed", "Completed before the cancel took"
        FAILED = "failed", "Failed before the cancel took"

    idempotency_key = models.CharField(max_length=128, unique=True)
    object_kind = models.CharField(max_length=16)  # task | operation
    protocol = models.CharField(max_length=16, blank=True)
    object_id = models.CharField(max_length=256)
    requested_by = models.CharField(max_length=150)
    reason = models.TextField()
    gateway = models.CharField(max_length=16)
    state = models.CharField(max_length=16, choices=State.choices, default=State.OPEN)
    result = models.CharField(max_length=32, blank=True)
    message = models.TextField(blank=True)
    upstream_status = models.PositiveSmallIntegerField(null=True, blank=True)
    upstream = models.JSONField(default=dict, blank=True)
    bulk = models.ForeignKey(
        "BulkCancel", null=True, blank=True, on_delete=models.SET_NULL, related_name="requests"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # An uncertain cancel is re-read on a bounded schedule until its object shows what
    # happened; it stays open (state uncertain, no resolved_at) until then.
    checks = models.PositiveSmallIntegerField(default=0)  # re-reads done by the resolver
    next_check_at = models.DateTimeField(null=True, blank=True)  # None: none scheduled
    last_checked_at = models.DateTimeField(null=True, blank=True)
    resolved_at = models.DateTimeField(null=True, blank=True)
    resolution = models.CharField(max_length=16, choices=Resolution.choices, blank=True)
    gave_up_at = models.DateTimeField(null=True, blank=True)  # schedule ran out: still open

    OPEN_UNCERTAIN = models.Q(state="uncertain", resolved_at__isnull=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["object_kind", "protocol", "object_id"],
                condition=models.Q(state="open"),
                name="one_open_cancel_per_object",
            ),
        ]
        indexes = [
            models.Index(
                fields=["object_kind", "object_id", "-created_at"], name="cancel_object_idx"
            ),
            # The resolver's "due" query and the dashboard's list: open uncertain only.
            models.Index(
                fields=["next_check_at"],
                condition=models.Q(state="uncertain", resolved_at__isnull=True),
                name="cancel_recheck_due_idx",
            ),
            models.Index(
                fields=["-created_at"],
                condition=models.Q(state="uncertain", resolved_at__isnull=True),
                name="cancel_uncertain_open_idx",
            ),
        ]

    def __str__(self) -> str:
        return f"cancel {self.object_kind} {self.object_id} ({self.state})"


class BulkCancel(models.Model):
    """A batch of cancels started from a list page, run by the task framework."""

    class State(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        FINISHED = "finished", "Finished"
        FAILED = "failed", "Failed"

    object_kind = models.CharField(max_length=16)
    requested_by = models.CharField(max_length=150)
    reason = models.TextField()
    query = models.TextField(blank=True)  # the list filter it was started from
    state = models.CharField(max_length=16, choices=State.choices, default=State.QUEUED)
    total = models.PositiveIntegerField(default=0)
    done = models.PositiveIntegerField(default=0)
    counts = models.JSONField(default=dict, blank=True)
    items = models.JSONField(default=list, blank=True)  # [[protocol, object id], ...]
    task_result_id = models.CharField(max_length=64, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"bulk cancel #{self.pk} of {self.total} {self.object_kind}s ({self.state})"

    @property
    def percent(self) -> int:
        return int(100 * self.done / self.total) if self.total else 100


class ProjectionJob(models.Model):
    """An audit sweep or a re-projection, run on the task framework, with its report."""

    class Kind(models.TextChoices):
        AUDIT = "audit", "Projection audit"
        DRY_RUN = "dry_run", "Re-projection (dry run)"
        REPROJECT = "reproject", "Re-projection"

    class State(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        FINISHED = "finished", "Finished"
        FAILED = "failed", "Failed"

    kind = models.CharField(max_length=16, choices=Kind.choices)
    state = models.CharField(max_length=16, choices=State.choices, default=State.QUEUED)
    requested_by = models.CharField(max_length=150)
    progress = models.CharField(max_length=200, blank=True)
    report = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["kind", "-created_at"], name="projection_job_idx")]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} #{self.pk} ({self.state})"
