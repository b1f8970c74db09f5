"""Agent cards and scorecards on the task framework (django-tasks, ``manage.py db_worker``).

The scorecards' schedule: after each pass too, ``schedule_scoring`` keeps one
``score_agents`` job waiting once the newest scorecards are older than
``AGENT_SCORECARD_EVERY_SECONDS``; an operator's button queues one at once.

The cards' schedule: after each ``sync_beeos`` pass (``BEEOS_SYNC_AFTER_PASS``)
``schedule_card_reads`` keeps one ``refresh_agent_cards`` job waiting when some card
is due (``services.due_agents``); the job reads only those, one job at a time.
"""

from __future__ import annotations

from django.conf import settings
from django.db import connection
from django.utils import timezone
from django_tasks import task as background_task

from beeos_console.core.jobs import enqueue_once

from . import scorecard, services

READING_LOCK_KEY = 727379971  # pg advisory lock: one job reads cards at a time
SCHEDULE_LOCK_KEY = 727379972  # pg advisory lock: one "is a job waiting?" check at a time


@background_task()
def refresh_agent_cards() -> dict[str, str]:
    """Re-read the cards due for a scheduled read (``services.due_agents``): agent -> outcome.

    One job reads at a time: another one already reading (another worker) makes this
    one end at once, reading nothing.
    """
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(%s)", [READING_LOCK_KEY])
        if not cursor.fetchone()[0]:
            return {}
    try:
        return services.refresh_cards(services.due_agents())
    finally:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_unlock(%s)", [READING_LOCK_KEY])


def schedule_card_reads() -> str | None:
    """After a sync pass: keep one ``refresh_agent_cards`` job waiting when cards are due.

    Nothing without a Cloud or with ``AGENT_CARD_REFRESH_SECONDS`` = 0; a line for the
    sync's output otherwise.
    """
    if not settings.BEEOS_CLOUD_URL or services.refresh_interval() is None:
        return None
    due = services.due_agents()
    if not due:
        return None
    queued = enqueue_once(refresh_agent_cards, SCHEDULE_LOCK_KEY)
    what = "job queued" if queued else "a job is already waiting"
    return f"agent cards: {len(due)} due for a re-read ({what})"


@background_task()
def score_agents() -> dict[str, int]:
    """Compute every agent's conformance scorecard (``scorecard.score_agents``)."""
    return scorecard.score_agents()


def request_scoring() -> bool:
    """Enqueue ``score_agents`` unless one is already waiting; True when this one queued it."""
    return enqueue_once(score_agents, SCHEDULE_LOCK_KEY)


def schedule_scoring() -> str | None:
    """After a sync pass: have the worker score the agents again once the newest
    scorecards are older than ``AGENT_SCORECARD_EVERY_SECONDS`` (0: on demand only)."""
    every = settings.AGENT_SCORECARD_EVERY_SECONDS
    if every <= 0:
        return None
    newest = scorecard.newest_computed_at()
    if newest is not None and (timezone.now() - newest).total_seconds() < every:
        return None
    queued = request_scoring()
    return f"agent scorecards: {'job queued' if queued else 'a job is already waiting'}"
