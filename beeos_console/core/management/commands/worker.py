"""`manage.py worker`: django-tasks' ``db_worker``, stopped without stranding a job.

``db_worker`` (django-tasks-db 0.13) already stops claiming on SIGTERM, SIGINT or
SIGQUIT and lets a running job finish. Two gaps remain, both closed here:

- A signal that lands between claiming a job and starting it (the claim's COMMIT
  included) exits at once: the job stays "running" for ever, on no worker. Here a
  signal only stops the loop, which always runs a job it has claimed; an idle
  worker stops within ``--interval`` seconds.
- Any second signal fails the running job. A SIGTERM often comes twice (make passes
  it on, and a process-group or container stop sends it to every process): here a
  repeated SIGTERM changes nothing. A second SIGINT or SIGQUIT (Ctrl-C twice) still
  stops at once, and returns the job to the queue (ready) for the next worker instead
  of failing it: the console's jobs are safe to run again (a bulk cancel resumes by
  idempotency key, re-projections and cancel re-reads are repeatable).

The signal handler is ``db_worker``'s ``shutdown``, overridden (``configure_signals``
installs ``self.shutdown``: no other handler is ever installed). Python may run a
handler inside another one (a signal arriving while the first is still running, e.g.
while it writes its log line under load), so each call takes its place in one
atomic step before doing anything else: two signals are always first and second,
however close together they come.

Options and everything else are ``db_worker``'s.
"""

from __future__ import annotations

import itertools
import logging
import os
import signal
import sys
from types import FrameType
from typing import Any

from django.core.management.base import CommandError
from django.db import DatabaseError, connection
from django.utils.autoreload import DJANGO_AUTORELOAD_ENV, run_with_reloader
from django_tasks.base import TaskResultStatus
from django_tasks_db.management.commands.db_worker import Command as DbWorkerCommand
from django_tasks_db.management.commands.db_worker import Worker
from django_tasks_db.models import DBTaskResult

logger = logging.getLogger("django_tasks_db")


class JobReturned(KeyboardInterrupt):
    """Raised inside a running job to unwind it: its transactions roll back, and
    psycopg cancels a query it interrupts (as on Ctrl-C); the job's own ``except
    Exception`` does not catch it."""


class StoppingWorker(Worker):
    """db_worker's loop with a stop that never strands or fails a job."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.returning = False
        # Numbers the signals received: ``next`` is one C call, so a handler that runs
        # inside another still gets its own number (a read-then-write of a flag would
        # let both calls see "first").
        self._signals = itertools.count()

    def shutdown(self, signum: int, frame: FrameType | None) -> None:
        first = next(self._signals) == 0  # before anything else (see the module's docstring)
        name = signal.strsignal(signum)
        if first:
            self.running = False
            logger.warning("Received %s: finishing the current job, then stopping.", name)
            return
        if signum == signal.SIGTERM or not self.running_task or self.returning:
            # A repeated SIGTERM; nothing to interrupt; or the job is being returned
            # already (stopping now would strand it): changes nothing.
            return
        self.returning = True
        logger.warning("Received %s again: returning the current job to the queue.", name)
        raise JobReturned(name)

    def run_task(self, db_task_result: DBTaskResult) -> None:
        # db_worker marks a job failed whatever ended it; a returned one goes back.
        super().run_task(db_task_result)
        if self.returning:
            return_to_queue(db_task_result)
            sys.exit(1)


def return_to_queue(db_task_result: DBTaskResult) -> None:
    """Ready again, as if never started (``worker_ids`` keeps who had it)."""
    for attempt in range(2):
        try:
            DBTaskResult.objects.filter(pk=db_task_result.pk).update(
                status=TaskResultStatus.READY,
                started_at=None,
                finished_at=None,
                return_value=None,
                exception_class_path="",
                traceback="",
            )
        except DatabaseError:
            if attempt:
                raise
            connection.close()  # the interrupted job may have left it unusable
        else:
            logger.warning("Job id=%s returned to the queue.", db_task_result.pk)
            return


class Command(DbWorkerCommand):
    help = "Run the background worker (django-tasks db_worker, stopped without losing a job)."

    def handle(  # type: ignore[override]
        self,
        *,
        verbosity: int,
        queue_name: str,
        interval: float,
        batch: bool,
        backend_name: str,
        startup_delay: bool,
        reload: bool,
        max_tasks: int | None,
        worker_id: str,
        exclude_queues: str,
        **options: Any,
    ) -> None:
        # db_worker's own handle (django-tasks-db 0.13.0), building our Worker.
        self.configure_logging(verbosity)
        if reload and batch:
            logger.warning("--reload and --batch cannot be specified together: not reloading.")
            reload = False
        excluded = exclude_queues.split(",") if exclude_queues else []
        queue_names = queue_name.split(",")
        if excluded and "*" not in queue_names:
            raise CommandError("--exclude-queues can only be used with --queue-name=*")
        worker = StoppingWorker(
            queue_names=queue_names,
            interval=interval,
            batch=batch,
            backend_name=backend_name,
            startup_delay=startup_delay,
            max_tasks=max_tasks,
            worker_id=worker_id,
            excluded_queue_names=excluded,
        )
        if reload:
            if os.environ.get(DJANGO_AUTORELOAD_ENV) == "true":
                worker.configure_signals()  # the reloaded child only
            run_with_reloader(worker.run)
        else:
            worker.configure_signals()
            worker.run()
