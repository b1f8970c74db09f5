"""Background jobs on django-tasks' database backend: keep one job of a kind waiting."""

from __future__ import annotations

from django.db import connection, transaction
from django_tasks import TaskResultStatus
from django_tasks.base import Task
from django_tasks_db.models import DBTaskResult


def enqueue_once(task: Task, lock_key: int) -> bool:
    """Enqueue ``task`` unless a job of it already waits (ready); True when this call did.

    One check at a time (a transaction-level advisory lock on ``lock_key``), so callers
    racing each other — receivers, sync passes, buttons — leave one waiting job, never a
    pile of them for a stopped worker to work through.
    """
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [lock_key])
        waiting = DBTaskResult.objects.filter(
            status=TaskResultStatus.READY, task_path=task.module_path
        ).exists()
        if not waiting:
            task.enqueue()
    return not waiting
