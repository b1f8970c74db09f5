"""Cancelling a runtime operation: its cancel target, the one refusal rule, the local cancel.

The engine (``beeos_console.cancels.engine``) does the safe part (idempotency,
locking, the gateway call, the audit); an operation says here what it is,
whether it may be cancelled and why not, and how the local gateway cancels it.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.db import transaction
from django.utils.translation import gettext

from beeos_console.auditlog.services import Actor
from beeos_console.cancels.engine import CancelOutcome, CancelTarget, Refusal, request_cancel
from beeos_console.cancels.gateways import Gateway, GatewayAnswer
from beeos_console.mirror.i18n import translated
from beeos_console.mirror.said import gettext_noop
from operations import states
from operations.models import RuntimeOperation

from .rules import state_summary
from .write import ingest_runtime_operation


def apply_local_cancel(
    op: RuntimeOperation, *, requested_by: str, reason: str, at: dt.datetime
) -> bool:
    """The local gateway's cancel: a cancel request, then cancelled / effectState cancelled.

    Returns False when the operation moved past running meanwhile.
    """
    with transaction.atomic():
        op = RuntimeOperation.objects.select_for_update().get(pk=op.pk)
        if not states.is_cancellable(op.raw_status):
            return False
        _write_local_cancel(op, requested_by=requested_by, reason=reason, at=at)
    return True


def _write_local_cancel(
    op: RuntimeOperation, *, requested_by: str, reason: str, at: dt.datetime
) -> None:
    payload = dict(op.raw_payload or {})
    payload.update(
        {
            "sequence": str(int(op.sequence) + 1),
            "updatedAt": at.isoformat(),
            "status": states.cancel_spelling(),
            "effectState": "cancelled",
            "terminal": True,
            "cancelRequest": {
                "requestedBy": requested_by,
                "reason": reason,
                "requestedAt": at.isoformat(),
            },
        }
    )
    payload.pop("progress", None)
    ingest_runtime_operation(payload, actor=Actor.system("local-gateway"))


def cancel_refusal(op: RuntimeOperation) -> Refusal | None:
    """Why this operation may not be cancelled now; None when it may (its status decides).

    The words in the reader's language; the summary stays English (see ``tasks``).
    """
    reason = states.cancel_refusal_reason(op.raw_status)
    if reason is None:
        return None
    code, words, summary = reason
    return Refusal(
        gettext("%(why)s No call was made.") % {"why": translated(words)},
        code=code,
        summary=summary,
    )


class OperationCancelTarget(CancelTarget):
    kind = "operation"

    def load(self, *, lock: bool = True) -> RuntimeOperation | None:
        qs = RuntimeOperation.objects.select_for_update() if lock else RuntimeOperation.objects
        return qs.filter(operation_id=self.object_id).first()

    @staticmethod
    def object_id_of(obj: RuntimeOperation) -> str:
        return obj.operation_id

    def refusal(self, obj: RuntimeOperation) -> Refusal | None:
        return cancel_refusal(obj)

    def already_requested(self, obj: RuntimeOperation) -> Refusal | None:
        if obj.has_cancel_request:
            when = (
                obj.cancel_requested_at.isoformat()
                if obj.cancel_requested_at
                else gettext("earlier")
            )
            return Refusal(
                gettext(
                    "Already cancel-requested by %(who)s (%(when)s). No second request was sent."
                )
                % {"who": obj.cancel_requested_by or gettext("someone"), "when": when},
                code="already_requested",
                summary=gettext_noop("already cancel-requested"),
            )
        return None

    def apply_local_cancel(
        self, obj: RuntimeOperation, *, requested_by: str, reason: str, at: dt.datetime
    ) -> bool:
        return apply_local_cancel(obj, requested_by=requested_by, reason=reason, at=at)

    def summary(self, obj: RuntimeOperation) -> dict[str, Any]:
        return state_summary(obj) if obj else {}

    def call(
        self, gw: Gateway, obj: RuntimeOperation, key: str, reason: str, actor: Actor
    ) -> GatewayAnswer:
        return gw.cancel_operation(obj, idempotency_key=key, reason=reason, requested_by=actor.name)

    def reread(self, gw: Gateway, obj: RuntimeOperation) -> None:
        gw.reread_operation(obj)

    def is_cancelled(self, obj: RuntimeOperation) -> bool:
        return states.is_cancelled(obj.raw_status)


def cancel_operation(
    operation_id: str,
    *,
    actor: Actor,
    reason: Any,
    idempotency_key: Any = None,
    gw: Gateway | None = None,
    bulk: Any = None,
) -> CancelOutcome:
    """Cancel one runtime operation safely: only while queued or running."""
    return request_cancel(
        OperationCancelTarget("", operation_id),
        actor=actor,
        reason=reason,
        idempotency_key=idempotency_key,
        gw=gw,
        bulk=bulk,
    )
