"""Read helpers for task pages: each one a fixed number of queries."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import F
from django.db.models.fields.tuple_lookups import Tuple, TupleLessThan
from django.utils.translation import gettext

from beeos_console.core.pagination import decode_cursor, encode_cursor

from . import states
from .models import Artifact, Message, Task


def tasks_by_id(task_id: str, *, protocol: str | None = None) -> list[Task]:
    """The same id may exist under several protocols (OpenAPI and its A2A projection)."""
    qs = Task.objects.filter(task_id=task_id)
    if protocol:
        qs = qs.filter(protocol=protocol)
    return list(qs.order_by("protocol")[:5])


@dataclass
class Timeline:
    messages: list[Message]
    earlier_cursor: str | None


def timeline(task: Task, *, before: str | None = None, limit: int = 100) -> Timeline:
    """The newest ``limit`` messages of a task, oldest first; older ones on request.

    One query whatever the length of the conversation ("load earlier" pages
    back with a keyset cursor on (created_at, id)); a cursor we did not make
    raises ``BadCursor``.
    """
    qs = Message.objects.filter(task=task).exclude(created_at__isnull=True)
    if before:
        # BadCursor (forged or garbled) is the caller's to answer.
        value, pk = decode_cursor(before, Message._meta.get_field("created_at"))
        qs = qs.filter(TupleLessThan(Tuple(F("created_at"), F("id")), (value, pk)))
    rows = list(qs.order_by("-created_at", "-id")[: limit + 1])
    more = len(rows) > limit
    rows = rows[:limit]
    rows.reverse()
    earlier = encode_cursor(rows[0].created_at, rows[0].pk) if more and rows else None
    return Timeline(rows, earlier)


def deciding_reply(task: Task) -> Message | None:
    """The terminal agent reply that is the evidence for the task's result (seed)."""
    return (
        Message.objects.filter(
            task=task, type=states.AGENT_REPLY, state__in=states.MESSAGE_TERMINAL_SPELLINGS
        )
        .order_by("-created_at", "-id")
        .only("id", "message_id", "state", "stop_reason")
        .first()
    )


def latest_agent_reply(task: Task) -> Message | None:
    """The agent's newest reply in any state (a cancel warns when it has already ended)."""
    return (
        Message.objects.filter(task=task, type=states.AGENT_REPLY)
        .order_by("-created_at", "-id")
        .only("id", "message_id", "state", "stop_reason")
        .first()
    )


def cancel_warnings(task: Task, latest_reply: Message | None) -> list[str]:
    """What an operator should know before cancelling this task, in words."""
    warnings = []
    if latest_reply is not None and states.is_message_terminal(latest_reply.state):
        how = latest_reply.state + (
            f", {latest_reply.stop_reason}" if latest_reply.stop_reason else ""
        )
        warnings.append(
            gettext(
                "The agent's latest reply has already ended (%(how)s): the task may be about "
                "to finish by itself. Look at the message timeline before cancelling."
            )
            % {"how": how}
        )
    if states.project(task.protocol, task.raw_state).reason == "auth_required":
        warnings.append(
            gettext(
                "The task is waiting for the caller to sign in. Cancelling ends it: the caller "
                "will have to start again."
            )
        )
    return warnings


def artifacts(task: Task) -> list[Artifact]:
    """The artifacts the task's last snapshot carried (A2A)."""
    return list(task.artifacts.all())
