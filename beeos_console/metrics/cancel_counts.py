"""Cancel attempts by gateway and result, counted in the process as each attempt ends.

Not read from the database at scrape time: nothing indexes cancel requests by
gateway and result, so that would be a COUNT over a table that only grows. Not
maintained in a counter table either: that would add a write to the cancel engine's
own transaction, and a cancel must be recorded ("not sent", audited) even while
such a table is locked. So each process counts the attempts it ended
(``instruments.CANCEL_ATTEMPTS``), summed across processes like every process
metric (a bulk cancel runs in the background worker: give it the same
``PROMETHEUS_MULTIPROC_DIR``).

The receivers watch the model's own signals, so the engine needs no metrics code:
a request counts once, when it is saved with an end (refused, not sent, accepted,
uncertain, failed…) — created ended, or ended after it was seen open. Later saves
(the re-reads of an uncertain cancel) and replays of an idempotency key do not
count again.
"""

from __future__ import annotations

from typing import Any

from beeos_console.cancels.models import CancelRequest
from beeos_console.metrics import instruments

SEEN_STATE = "_metrics_seen_state"  # the state this instance was loaded or last saved with
OPEN = CancelRequest.State.OPEN


def remember_state(sender: Any, instance: CancelRequest, **kwargs: Any) -> None:
    """post_init: note the state as loaded (``__dict__``: a deferred field stays unloaded)."""
    instance.__dict__[SEEN_STATE] = instance.__dict__.get("state")


def count_ended_attempt(
    sender: Any, instance: CancelRequest, created: bool, raw: bool = False, **kwargs: Any
) -> None:
    """post_save: count the attempt the first time it is saved with an end."""
    if raw:
        return  # loaddata
    state = instance.__dict__.get("state")
    seen = instance.__dict__.get(SEEN_STATE)
    instance.__dict__[SEEN_STATE] = state
    if state in (None, OPEN) or not (created or seen == OPEN):
        return
    instruments.CANCEL_ATTEMPTS.labels(instance.gateway or "none", instance.result or "none").inc()
