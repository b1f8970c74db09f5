"""Is this work stuck, or past its deadline? (the detail pages' banners)

Stuck: not terminal (queued or processing) with no upstream change for more
than ``CONSOLE_STUCK_AFTER_MINUTES`` — the same rule as the dashboard's "stuck
work" and the lists' ``?stuck=`` filter. Deadline passed: ``deadline_at`` is
over while the work is not terminal.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from django.conf import settings
from django.utils import timezone

from beeos_console.mirror.states import ACTIVE_PRODUCT_STATUSES


@dataclass(frozen=True, slots=True)
class Attention:
    stuck_since: dt.datetime | None = None
    stuck_minutes: int = 0
    deadline_passed_at: dt.datetime | None = None

    @property
    def stuck(self) -> bool:
        return self.stuck_since is not None


def attention(
    status: str,
    last_change: dt.datetime | None,
    *,
    deadline_at: dt.datetime | None = None,
    now: dt.datetime | None = None,
) -> Attention:
    """What a detail page warns about for work in ``status`` last changed at ``last_change``."""
    minutes = settings.CONSOLE_STUCK_AFTER_MINUTES
    if status not in ACTIVE_PRODUCT_STATUSES:
        return Attention(stuck_minutes=minutes)
    now = now or timezone.now()
    stuck = last_change is not None and last_change < now - dt.timedelta(minutes=minutes)
    return Attention(
        stuck_since=last_change if stuck else None,
        stuck_minutes=minutes,
        deadline_passed_at=deadline_at if deadline_at is not None and deadline_at < now else None,
    )
