"""Retention periods as an operator types them: ``90d``, ``12h``, ``2w``, ``30m``."""

from __future__ import annotations

import datetime as dt
import re

UNITS = {"m": "minutes", "h": "hours", "d": "days", "w": "weeks"}
_PERIOD = re.compile(r"\s*(\d{1,6})\s*([mhdw])\s*", re.IGNORECASE)
# Ten years: beyond it a period is a typo, and the cutoff would leave the calendar.
LONGEST = dt.timedelta(days=3653)


def parse_period(text: str) -> dt.timedelta:
    """A positive whole number and a unit (m, h, d, w); ValueError says what is wrong."""
    match = _PERIOD.fullmatch(text or "")
    if match is None:
        raise ValueError(
            f"{text!r} is not a period: write a whole number and a unit, e.g. 90d, 12h or 2w "
            "(m minutes, h hours, d days, w weeks)"
        )
    number, unit = int(match.group(1)), match.group(2).lower()
    period = dt.timedelta(**{UNITS[unit]: number})
    if period <= dt.timedelta(0):
        raise ValueError(f"{text!r}: the period must be longer than zero")
    if period > LONGEST:
        raise ValueError(f"{text!r}: the period must be at most ten years")
    return period
