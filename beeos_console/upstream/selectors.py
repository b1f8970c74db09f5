"""Reads of the webhook inbox: the backlog (dashboard, /metrics) and the admin list."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from django.db import connection
from django.utils import timezone

from beeos_console.upstream.models import WebhookInboxEvent

# Counts stop here: the backlog is read on the dashboard and by every /metrics scrape,
# so it is bounded whatever the inbox holds ("10,000+").
BACKLOG_CAP = 10_000
_TABLE = WebhookInboxEvent._meta.db_table

# One statement: queued rows counted through the claim's partial index up to the cap,
# the oldest one's time from the same index, failed rows through theirs, applied rows
# (the bulk) up to the cap through the list's index.
_BACKLOG = f"""
SELECT
  (SELECT count(*) FROM (SELECT 1 FROM {_TABLE} WHERE status = 'queued' LIMIT %s) AS q),
  (SELECT received_at FROM {_TABLE} WHERE status = 'queued' ORDER BY id LIMIT 1),
  (SELECT count(*) FROM (SELECT 1 FROM {_TABLE} WHERE status = 'failed' LIMIT %s) AS f),
  (SELECT count(*) FROM (SELECT 1 FROM {_TABLE} WHERE status = 'applied' LIMIT %s) AS a)
"""


@dataclass(frozen=True)
class Backlog:
    """Events per inbox status (each counted up to ``cap`` + 1) and the oldest queued one."""

    queued: int
    oldest_received_at: dt.datetime | None
    failed: int
    applied: int
    now: dt.datetime
    cap: int = BACKLOG_CAP

    @property
    def oldest_age_seconds(self) -> float:
        """How long the oldest queued event has waited; 0 with nothing queued."""
        if self.oldest_received_at is None:
            return 0.0
        return max(0.0, (self.now - self.oldest_received_at).total_seconds())

    @property
    def queued_capped(self) -> bool:
        return self.queued > self.cap

    @property
    def by_status(self) -> dict[str, int]:
        """Each status's count, the cap where there are more (as /metrics shows them)."""
        counts = {"queued": self.queued, "applied": self.applied, "failed": self.failed}
        return {status: min(n, self.cap) for status, n in counts.items()}


def webhook_backlog(cap: int = BACKLOG_CAP) -> Backlog:
    """The inbox backlog in one bounded query (counts stop at ``cap`` + 1)."""
    with connection.cursor() as cursor:
        cursor.execute(_BACKLOG, [cap + 1, cap + 1, cap + 1])
        queued, oldest, failed, applied = cursor.fetchone()
    return Backlog(queued, oldest, failed, applied, timezone.now(), cap)
