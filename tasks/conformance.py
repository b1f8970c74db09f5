"""How well a task's producer followed the protocol, as data filters (issue #17, point 5).

The agents' conformance scorecard counts these per agent and links each count to
the task list filtered the same way (``?conformance=…``, ``?cancel_outcome=…``), so
a figure and the rows behind it come from one definition here.

Nothing here decides a rule: which raw values are spelled non-canonically
(``states.producer_note``: letter case, blanks, the other cancel spelling), which
no table knows (``states.project(...).is_unmapped``), which pause a task
(``states.is_paused``, with its reason) and which envelope states are terminal
(``states.is_message_terminal``) are the state tables' answers, the ones the
projection audit reports. This module turns them into SQL: the distinct raw
values present are read from their index (a skip scan: one probe per distinct
value, never a table scan), classified once in Python, and rows are matched on
the resulting ``(protocol, raw value)`` lists.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from django.db import connection
from django.db.models import Exists, OuterRef, Q
from django.utils.translation import gettext_lazy as _

from beeos_console.auditlog.models import AuditEntry
from beeos_console.cancels.models import CancelRequest
from beeos_console.core.sql import skip_scan_sql
from beeos_console.mirror.states import COMPLETED

from . import states
from .models import Message, Task

Pairs = list[tuple[str, str]]  # (protocol, raw state)
# Matches no row, yet compiles to SQL (``pk__in=[]`` would empty a whole aggregate).
NOTHING = Q(pk__isnull=True)

NON_CANONICAL = "non_canonical"
UNMAPPED = "unmapped"
NO_DECIDING_REPLY = "no_deciding_reply"
INPUT_REQUIRED = "input_required"
AUTH_REQUIRED = "auth_required"
PAUSE_REASONS = (INPUT_REQUIRED, AUTH_REQUIRED)  # states.PAUSED_REASONS, in display order

CONFORMANCE_CHOICES = [
    (NON_CANONICAL, _("raw state spelled non-canonically (letter case, blanks, cancel spelling)")),
    (UNMAPPED, _("raw state no table knows (unmapped)")),
    (NO_DECIDING_REPLY, _("completed, but no terminal agent reply decides it")),
    (INPUT_REQUIRED, _("waited for input (input-required), now or before")),
    (AUTH_REQUIRED, _("waited for authorisation (auth-required), now or before")),
]

# How a console cancel of a task ended: honoured (accepted, or an uncertain one that a
# re-read found cancelled), or refused / lost / timed out with seed 003's A2A codes.
HONOURED = "honoured"
A2A_NOT_CANCELABLE = "-32002"
A2A_LOST_AFTER_DISPATCH = "-32010"
A2A_TIMED_OUT = "-32011"
CANCEL_OUTCOMES = (HONOURED, A2A_NOT_CANCELABLE, A2A_LOST_AFTER_DISPATCH, A2A_TIMED_OUT)
CANCEL_OUTCOME_CHOICES = [
    (HONOURED, _("honoured")),
    (A2A_NOT_CANCELABLE, _("refused: -32002 not cancelable")),
    (A2A_LOST_AFTER_DISPATCH, _("lost after dispatch: -32010")),
    (A2A_TIMED_OUT, _("timed out: -32011")),
]


def cancel_outcome_q(outcome: str) -> Q:
    """The cancel requests (``CancelRequest`` rows) that ended this way."""
    if outcome == HONOURED:
        return Q(state=CancelRequest.State.ACCEPTED) | Q(
            resolution=CancelRequest.Resolution.CANCELLED
        )
    return Q(upstream__a2a_code=outcome)


def distinct_values(table: str, column: str) -> list[str]:
    """Every distinct value of ``column`` (it must lead an index: ``task_raw_state_idx``,
    ``message_state_idx``)."""
    with connection.cursor() as cursor:
        cursor.execute(skip_scan_sql(f'"{table}"', column))
        return [row[0] for row in cursor.fetchall()]


@dataclass
class StateClasses:
    """The ``(protocol, raw state)`` pairs present in the task table, by what the tables
    make of them."""

    non_canonical: Pairs = field(default_factory=list)
    unmapped: Pairs = field(default_factory=list)
    completed: Pairs = field(default_factory=list)
    paused: dict[str, Pairs] = field(default_factory=lambda: defaultdict(list))


def classify(raw_values: Iterable[str]) -> StateClasses:
    """Each raw value under each task protocol, by the state tables' own rules."""
    found = StateClasses()
    for raw in raw_values:
        for protocol in states.TASK_PROTOCOLS:
            pair = (protocol, raw)
            projection = states.project(protocol, raw)
            if projection.is_unmapped:
                found.unmapped.append(pair)
                continue
            if states.producer_note(protocol, raw) is not None:
                found.non_canonical.append(pair)
            if projection.status == COMPLETED:
                found.completed.append(pair)
            if states.is_paused(protocol, raw):
                found.paused[projection.reason].append(pair)
    return found


def state_classes() -> StateClasses:
    """The pairs of the raw states stored now (one skip scan of ``task_raw_state_idx``) and
    of every spelling the tables write: an audited state a task has left (a pause) is
    matched even when no task holds that value any more. (A foreign spelling only the
    audit log still holds is not: reading it would scan the log.)"""
    written = {
        value for protocol in states.TASK_PROTOCOLS for value in states.known_values(protocol)
    }
    return classify(sorted({*distinct_values(Task._meta.db_table, "raw_state"), *written}))


def terminal_message_states() -> list[str]:
    """The envelope states stored now that are terminal (``states.is_message_terminal``)."""
    values = distinct_values(Message._meta.db_table, "state")
    return [value for value in values if states.is_message_terminal(value)]


def pairs_q(pairs: Pairs, *, protocol: str = "protocol", raw: str = "raw_state") -> Q:
    """Rows whose (protocol, raw state) is one of ``pairs`` (none when empty)."""
    found = [Q(**{protocol: p, f"{raw}__in": v}) for p, v in sorted(_by_protocol(pairs).items())]
    return _any(found)


def no_deciding_reply_q(classes: StateClasses, terminal_states: list[str]) -> Q:
    """Completed tasks whose envelopes hold no terminal agent reply.

    The projection audit's evidence rule for a task no reply decides (its
    ``no_terminal_reply`` and ``user_request_as_completion`` findings): the task
    has message envelopes (A2A history carries no envelope states, so the rule
    does not apply to it) and none is a terminal ``agent_reply``. The audit also
    drops replies that only paused the task or came before a recorded cancel; those
    need the audit log and are left to the audit.
    """
    envelopes = Message.objects.filter(task=OuterRef("pk"), source=Message.Source.ENVELOPE)
    # No terminal state stored at all: nothing decides (and ``__in=[]`` must not empty
    # the whole query this sits in, an aggregate's FILTER included).
    terminal = Q(state__in=terminal_states) if terminal_states else NOTHING
    deciding = envelopes.filter(terminal, type=states.AGENT_REPLY)
    return pairs_q(classes.completed) & Exists(envelopes) & ~Exists(deciding)


def paused_q(classes: StateClasses, reason: str) -> Q:
    """Tasks paused with ``reason`` now, or whose audited state history shows it paused.

    Every state change is audited (``task.state_changed``, before and after), so a
    task that ever paused has an entry into or out of the pause, unless it is still
    in the pause it was first mirrored in (then its raw state says so).
    """
    pairs = classes.paused.get(reason, [])
    history = _any(
        [
            Q(detail__protocol=protocol)
            & (Q(before__raw_state__in=values) | Q(after__raw_state__in=values))
            for protocol, values in sorted(_by_protocol(pairs).items())
        ]
    )
    entries = AuditEntry.objects.filter(
        history,
        object_kind="task",
        object_id=OuterRef("task_id"),
        action="task.state_changed",
    )
    return pairs_q(pairs) | Exists(entries)


def cancel_q(outcome: str) -> Q:
    """Tasks with a console cancel that ended this way."""
    requests = CancelRequest.objects.filter(
        cancel_outcome_q(outcome),
        object_kind="task",
        protocol=OuterRef("protocol"),
        object_id=OuterRef("task_id"),
    )
    return Q(Exists(requests))


def _any(conditions: list[Q]) -> Q:
    """Any of ``conditions`` (``NOTHING`` when there are none)."""
    if not conditions:
        return NOTHING
    found = conditions[0]
    for condition in conditions[1:]:
        found |= condition
    return found


def _by_protocol(pairs: Pairs) -> dict[str, list[str]]:
    found: dict[str, list[str]] = defaultdict(list)
    for protocol, value in pairs:
        found[protocol].append(value)
    return {p: sorted(v) for p, v in found.items()}


def conformance_q(check: str) -> Q:
    """The task list's ``?conformance=`` filter: reads the raw states present first."""
    classes = state_classes()
    if check == NON_CANONICAL:
        return pairs_q(classes.non_canonical)
    if check == UNMAPPED:
        return pairs_q(classes.unmapped)
    if check == NO_DECIDING_REPLY:
        return no_deciding_reply_q(classes, terminal_message_states())
    if check in PAUSE_REASONS:
        return paused_q(classes, check)
    raise ValueError(f"unknown conformance check {check!r}")
