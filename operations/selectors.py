"""Read helpers for operation pages (beyond the list): each one a fixed number of queries."""

from __future__ import annotations

from dataclasses import dataclass

from .models import RuntimeOperation, RuntimeOperationEvent

EVENT_ROWS = 500


@dataclass
class Events:
    events: list[RuntimeOperationEvent]
    truncated: bool  # more than ``limit`` events exist


def events(op: RuntimeOperation, *, limit: int = EVENT_ROWS) -> Events:
    """The operation's first ``limit`` events in sequence order (one query)."""
    rows = list(op.events.order_by("sequence", "event_id")[: limit + 1])
    return Events(rows[:limit], len(rows) > limit)
