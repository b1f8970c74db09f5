"""Signal receivers, connected when the app loads (web processes and the db_worker alike)."""

from __future__ import annotations

from typing import Any

from django.db.models.signals import post_init, post_save
from django_tasks.signals import task_finished, task_started

from beeos_console.cancels.models import CancelRequest
from beeos_console.metrics import cancel_counts, instruments


def job_task(task_result: Any) -> str:
    """The job's task as a label: its dotted path (one per task the code defines)."""
    return str(getattr(task_result.task, "module_path", "") or "unknown")


def job_started(sender: Any, task_result: Any, **kwargs: Any) -> None:
    instruments.WORKER_JOBS_STARTED.labels(job_task(task_result)).inc()


def job_finished(sender: Any, task_result: Any, **kwargs: Any) -> None:
    status = str(task_result.status).lower()
    instruments.WORKER_JOBS_FINISHED.labels(job_task(task_result), status).inc()


post_init.connect(cancel_counts.remember_state, sender=CancelRequest, dispatch_uid="metrics-cr")
post_save.connect(
    cancel_counts.count_ended_attempt, sender=CancelRequest, dispatch_uid="metrics-cr"
)
task_started.connect(job_started, dispatch_uid="metrics-jobs")
task_finished.connect(job_finished, dispatch_uid="metrics-jobs")
