"""Cancelling a task: its cancel target, the one refusal rule, the local cancel.

The engine (``beeos_console.cancels.engine``) does the safe part (idempotency,
locking, the gateway call, the audit); a task says here what it is, whether it
may be cancelled and why not, and how the local gateway cancels it.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.db import transaction
from django.utils.translation import gettext, pgettext

from beeos_console.auditlog.services import Actor
from beeos_console.cancels.engine import CancelOutcome, CancelTarget, Refusal, request_cancel
from beeos_console.cancels.gateways import Gateway, GatewayAnswer
from beeos_console.mirror import i18n
from beeos_console.mirror.said import gettext_noop
from tasks import states
from tasks.models import Task

from .rules import state_summary
from .snapshots import parse_a2a_task, parse_openapi_task
from .write import write_task


def apply_local_cancel(task: Task) -> bool:
    """The local gateway's cancel: the protocol's own canceled spelling, stamped.

    Goes through ``write_task`` like any snapshot, so the projection, the
    counters and the ordering rules apply as for real upstream data. Returns
    False when the task ended meanwhile (the terminal state wins).
    """
    with transaction.atomic():
        task = Task.objects.select_for_update().get(pk=task.pk)
        if cancel_refusal(task) is not None:
            return False
        _write_local_cancel(task)
    return True


def _write_local_cancel(task: Task) -> None:
    now = dt.datetime.now(dt.UTC)
    spelling = states.cancel_spelling(task.protocol, like=task.raw_state)
    payload = dict(task.raw_payload or {})
    if task.protocol == states.A2A:
        status = dict(payload.get("status") or {})
        status.update({"state": spelling, "timestamp": now.isoformat()})
        payload["status"] = status
        snapshot = parse_a2a_task(payload)
    else:
        payload.update(
            {"status": spelling, "updated_at": now.isoformat(), "completed_at": now.isoformat()}
        )
        payload.setdefault("task_id", task.task_id)
        snapshot = parse_openapi_task(payload, protocol=task.protocol, agent_optional=True)
    write_task(snapshot, actor=Actor.system("local-gateway"), authoritative=True)


def cancel_refusal(task: Task) -> Refusal | None:
    """Why this task may not be cancelled now (DESIGN.md, Cancel rules); None when it may.

    The one rule for tasks: the engine, bulk preview, list rows and pages ask it.
    Cancellability follows the status alone, never a producer's failure details.
    The words are said in the reader's language; the summary stays English (a bulk
    batch stores it) and is translated where it is shown.
    """
    projection = states.project(task.protocol, task.raw_state)
    if states.is_cancellable(task.protocol, task.raw_state):
        return None
    if projection.is_unmapped:
        return Refusal(
            gettext(
                "The task's state %(state)s is unmapped: the console cannot tell "
                "whether a cancel is safe. No call was made."
            )
            % {"state": repr(task.raw_state)},
            code="unmapped",
            summary=gettext_noop(
                "unmapped state %(state)s: cannot tell whether a cancel is safe",
                state=repr(task.raw_state),
            ),
        )
    return Refusal(
        gettext("The task has already ended (%(how)s). No call was made.")
        % {"how": ended_words(projection)},
        code="ended",
        summary=gettext_noop("already %(status)s", status=projection.status),
    )


def ended_words(projection: states.Projection) -> str:
    """How a terminal task ended, in words: status, reason, what to do (no rule syntax)."""
    parts = [i18n.status_label(projection.status)]
    if projection.reason:
        parts.append(i18n.reason_words(projection.reason))
    parts.append(i18n.retry_words(projection.retry_policy))
    return pgettext("list separator", "; ").join(parts)


class TaskCancelTarget(CancelTarget):
    kind = "task"

    def load(self, *, lock: bool = True) -> Task | None:
        qs = Task.objects.select_for_update() if lock else Task.objects
        return qs.filter(protocol=self.protocol, task_id=self.object_id).first()

    @staticmethod
    def object_id_of(obj: Task) -> str:
        return obj.task_id

    def refusal(self, obj: Task) -> Refusal | None:
        return cancel_refusal(obj)

    def apply_local_cancel(
        self, obj: Task, *, requested_by: str, reason: str, at: dt.datetime
    ) -> bool:
        return apply_local_cancel(obj)

    def summary(self, obj: Task) -> dict[str, Any]:
        return state_summary(obj) if obj else {}

    def call(self, gw: Gateway, obj: Task, key: str, reason: str, actor: Actor) -> GatewayAnswer:
        return gw.cancel_task(obj, idempotency_key=key, reason=reason)

    def reread(self, gw: Gateway, obj: Task) -> None:
        gw.reread_task(obj)


def cancel_task(
    protocol: str,
    task_id: str,
    *,
    actor: Actor,
    reason: Any,
    idempotency_key: Any = None,
    gw: Gateway | None = None,
    bulk: Any = None,
) -> CancelOutcome:
    """Cancel one task safely (see ``beeos_console.cancels.engine``)."""
    return request_cancel(
        TaskCancelTarget(protocol, task_id),
        actor=actor,
        reason=reason,
        idempotency_key=idempotency_key,
        gw=gw,
        bulk=bulk,
    )
