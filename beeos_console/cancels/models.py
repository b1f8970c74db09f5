"""Cancel requests (one per attempt) and bulk cancel jobs."""

from __future__ import annotations

from django.db import models
from django.utils.translation import gettext_lazy as _

# Every console table keeps the historical app label "console" (its migrations
# live in beeos_console/core/migrations), whichever package defines the model.


class CancelRequest(models.Model):
    """One operator's attempt to cancel one task or runtime operation.

    The ``idempotency_key`` makes a double click (or a retried API call) one
    request; the partial unique constraint allows one attempt in flight per
    object, so two operators cancelling at once cause one upstream call.
    """

    class State(models.TextChoices):
        OPEN = "open", _("In flight")
        ACCEPTED = "accepted", _("Accepted")
        REFUSED = "refused", _("Refused")
        NOT_SENT = "not_sent", _("Not sent (safe to retry)")
        UNCERTAIN = "uncertain", _("Outcome uncertain (not resent)")
        FAILED = "failed", _("Failed upstream")

    class Resolution(models.TextChoices):
        """What a re-read showed of an uncertain cancel's object."""

        CANCELLED = "cancelled", _("Cancelled")
        COMPLETED = "completed", _("Completed before the cancel took")
        FAILED = "failed", _("Failed before the cancel took")

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
        app_label = "console"
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
        QUEUED = "queued", _("Queued")
        RUNNING = "running", _("Running")
        FINISHED = "finished", _("Finished")
        FAILED = "failed", _("Failed")

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

    class Meta:
        app_label = "console"

    def __str__(self) -> str:
        return f"bulk cancel #{self.pk} of {self.total} {self.object_kind}s ({self.state})"

    @property
    def percent(self) -> int:
        return int(100 * self.done / self.total) if self.total else 100
