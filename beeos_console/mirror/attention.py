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
from django.db.models import Q
from django.utils import timezone

from beeos_console.mirror.states import ACTIVE_PRODUCT_STATUSES


def stuck_minutes() -> int:
    return settings.CONSOLE_STUCK_AFTER_MINUTES


def stuck_cutoff(now: dt.datetime | None = None, minutes: int | None = None) -> dt.datetime:
    """Work last changed before this is stuck (``minutes`` defaults to the setting)."""
    minutes = stuck_minutes() if minutes is None else minutes
    return (now or timezone.now()) - dt.timedelta(minutes=minutes)


def stuck_q(cutoff: dt.datetime, *, status_field: str = "status", field: str = "updated_at") -> Q:
    """Rows of non-terminal work whose last upstream change is older than ``cutoff``."""
    return Q(**{f"{status_field}__in": sorted(ACTIVE_PRODUCT_STATUSES), f"{field}__lt": cutoff})


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
    minutes = stuck_minutes()
    if status not in ACTIVE_PRODUCT_STATUSES:
        return Attention(stuck_minutes=minutes)
    now = now or timezone.now()
    stuck = last_change is not None and last_change < stuck_cutoff(now, minutes)
    return Attention(
        stuck_since=last_change if stuck else None,
        stuck_minutes=minutes,
        deadline_passed_at=deadline_at if deadline_at is not None and deadline_at < now else None,
    )
