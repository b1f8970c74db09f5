"""Applying the webhook inbox on the task framework (django-tasks, ``manage.py db_worker``).

Why not one job per event: a job is a row too, so the receiver would write twice
per event and the worker would pay a job's overhead per event. Instead the
receiver *nudges*: at most once per ``WEBHOOK_NUDGE_SECONDS`` per process (an
in-process clock, so at 1,000 events/s it is well under 1 % extra statements)
it makes sure ONE ``apply_webhook_inbox`` job is waiting, under an advisory lock
so two processes never both enqueue one. The job drains the backlog in batches
and, before it ends, polls an empty inbox for ``WEBHOOK_APPLY_LINGER_SECONDS``
(longer than the nudge interval): an event whose nudge was skipped because
another came just before it is still seen by the job that nudge ensured (that
job was still waiting when the skipped event's predecessor was acknowledged, so
it polls at least once more after the skipped event is stored).

Deployments that prefer a dedicated process run ``manage.py apply_webhooks
--loop`` instead (and set ``WEBHOOK_NUDGE_SECONDS=0``); both can run at once,
since workers share the backlog through ``SKIP LOCKED``.
"""

from __future__ import annotations

import time

from django.conf import settings
from django_tasks import task as background_task

from beeos_console.core.jobs import enqueue_once
from beeos_console.upstream import inbox

NUDGE_LOCK_KEY = 727379970  # pg advisory lock: one "is a job waiting?" check at a time
POLL_SECONDS = 0.2
_last_nudge = 0.0


@background_task()
def apply_webhook_inbox() -> dict[str, int]:
    """Apply queued events batch by batch, then linger on an empty inbox briefly; what
    was applied, by outcome.

    It ends after ``WEBHOOK_APPLY_JOB_SECONDS`` even under a steady stream, so the
    other jobs of a single worker (bulk cancels, re-reads) get their turn: by then a
    nudge has already queued the next apply job behind them.
    """
    linger = settings.WEBHOOK_APPLY_LINGER_SECONDS
    started = idle_since = time.monotonic()
    total = inbox.Applied()
    while True:
        report = inbox.apply_batch(settings.WEBHOOK_APPLY_BATCH)
        total.add(report)
        now = time.monotonic()
        if report.claimed > report.deferred:
            idle_since = now
            if now - started >= settings.WEBHOOK_APPLY_JOB_SECONDS:
                ensure_job()  # out of time, not out of work: the next job takes over
                break
        elif now - idle_since >= linger:
            break
        else:
            time.sleep(POLL_SECONDS)
    return {"applied": total.applied, "failed": total.failed, **total.outcomes}


def nudge() -> None:
    """Make sure an apply job is waiting, at most once per ``WEBHOOK_NUDGE_SECONDS``."""
    global _last_nudge
    every = settings.WEBHOOK_NUDGE_SECONDS
    now = time.monotonic()
    if every <= 0 or now - _last_nudge < every:
        return
    _last_nudge = now
    ensure_job()


def ensure_job() -> None:
    """Enqueue an apply job unless one is already waiting (one check at a time)."""
    enqueue_once(apply_webhook_inbox, NUDGE_LOCK_KEY)
