"""Projection audit and re-projection jobs run by the worker."""

from __future__ import annotations

from django.db import models
from django.utils.translation import gettext_lazy as _

# Every console table keeps the historical app label "console" (its migrations
# live in beeos_console/core/migrations), whichever package defines the model.


class ProjectionJob(models.Model):
    """An audit sweep or a re-projection, run on the task framework, with its report."""

    class Kind(models.TextChoices):
        AUDIT = "audit", _("Projection audit")
        DRY_RUN = "dry_run", _("Re-projection (dry run)")
        REPROJECT = "reproject", _("Re-projection")

    class State(models.TextChoices):
        QUEUED = "queued", _("Queued")
        RUNNING = "running", _("Running")
        FINISHED = "finished", _("Finished")
        FAILED = "failed", _("Failed")

    kind = models.CharField(max_length=16, choices=Kind.choices)
    state = models.CharField(max_length=16, choices=State.choices, default=State.QUEUED)
    requested_by = models.CharField(max_length=150)
    progress = models.CharField(max_length=200, blank=True)
    report = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        app_label = "console"
        indexes = [models.Index(fields=["kind", "-created_at"], name="projection_job_idx")]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} #{self.pk} ({self.state})"
