"""The cancel engine shared by tasks and runtime operations.

1. Same idempotency key seen before -> the recorded answer, no new call.
2. In one transaction, with the object's row locked: refuse when the rules
   say so (terminal, effect committed, outcome unknown), or when another
   cancel of the same object is in flight; else record an *open* request.
3. Call the gateway (outside any transaction: never hold locks on the network).
4. In a second transaction, with the row locked again: apply the answer (the
   terminal state wins a race with ingest), close the request, audit it.
Every attempt, whatever its end, writes exactly one audit entry.
"""

from __future__ import annotations

import uuid
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from . import audit, gateway
from .audit import Actor
from .gateway import Gateway, GatewayAnswer
from .models import CancelRequest

MAX_REASON = 2000

# Results an operator sees (and the REST API returns).
CANCELLED = "cancelled"  # took effect (local gateway, or upstream confirmed on re-read)
CANCEL_REQUESTED = "cancel_requested"  # accepted upstream; the effect follows
REFUSED = "refused"
ALREADY_REQUESTED = "already_requested"
NOT_SENT = "not_sent"
UNCERTAIN = "uncertain"
FAILED = "failed"

STATE_FOR_RESULT = {
    CANCELLED: CancelRequest.State.ACCEPTED,
    CANCEL_REQUESTED: CancelRequest.State.ACCEPTED,
    REFUSED: CancelRequest.State.REFUSED,
    ALREADY_REQUESTED: CancelRequest.State.REFUSED,
    NOT_SENT: CancelRequest.State.NOT_SENT,
    UNCERTAIN: CancelRequest.State.UNCERTAIN,
    FAILED: CancelRequest.State.FAILED,
}


class InvalidCancel(ValueError):
    """Bad input (no reason, bad key): nothing was recorded."""


@dataclass
class CancelOutcome:
    result: str
    message: str
    obj: Any = None
    request: CancelRequest | None = None
    answer: GatewayAnswer | None = None
    replayed: bool = False
    detail: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.result in (CANCELLED, CANCEL_REQUESTED)


class CancelTarget(ABC):
    """What the engine needs to know about one kind of object."""

    kind: str

    def __init__(self, protocol: str, object_id: str) -> None:
        self.protocol = protocol
        self.object_id = object_id

    @abstractmethod
    def load(self, *, lock: bool = True) -> Any:
        """The object (row-locked with select_for_update when ``lock``), or None."""

    @abstractmethod
    def refusal(self, obj: Any) -> str | None:
        """Why this object must not be cancelled now, in words; None when it may."""

    @abstractmethod
    def summary(self, obj: Any) -> dict[str, Any]:
        """Raw and product state, for the audit entry's before/after."""

    @abstractmethod
    def call(self, gw: Gateway, obj: Any, key: str, reason: str, actor: Actor) -> GatewayAnswer: ...

    @abstractmethod
    def reread(self, gw: Gateway, obj: Any) -> None: ...

    def already_requested(self, obj: Any) -> str | None:
        """A cancel request the upstream already holds (operations carry one)."""
        return None

    def is_cancelled(self, obj: Any) -> bool:
        return getattr(obj, "status", "") == "cancelled"


def new_idempotency_key() -> str:
    return f"console-{uuid.uuid4()}"


def clean_reason(reason: Any) -> str:
    if not isinstance(reason, str) or not reason.strip():
        raise InvalidCancel("A reason is required: say why this is being cancelled.")
    if len(reason) > MAX_REASON:
        raise InvalidCancel(f"The reason is too long ({len(reason)} > {MAX_REASON} characters).")
    return reason.strip()


def clean_key(key: Any) -> str:
    if key in (None, ""):
        return new_idempotency_key()
    if not isinstance(key, str) or len(key) > 128 or not key.isprintable():
        raise InvalidCancel("The idempotency key must be printable text of at most 128 characters.")
    return key


def request_cancel(
    target: CancelTarget,
    *,
    actor: Actor,
    reason: Any,
    idempotency_key: Any = None,
    gw: Gateway | None = None,
    bulk: Any = None,
) -> CancelOutcome:
    reason = clean_reason(reason)
    key = clean_key(idempotency_key)
    gw = gw or gateway.active_gateway()

    previous = CancelRequest.objects.filter(idempotency_key=key).first()
    if previous is not None:
        return _replay(target, previous)

    # --- step 2: decide under the row lock ------------------------------------
    with transaction.atomic():
        obj = target.load()
        if obj is None:
            raise LookupError(f"No {target.kind} {target.object_id!r} is mirrored.")
        before = target.summary(obj)
        refusal = target.refusal(obj)
        result = REFUSED
        if refusal is None:
            existing = target.already_requested(obj)
            if existing is None and _open_request(target) is not None:
                existing = "Another cancel of this item is in flight right now."
            if existing is not None:
                refusal, result = existing, ALREADY_REQUESTED
        if refusal is not None:
            request = _record(target, key, actor, reason, gw, bulk, result, refusal, before, before)
            return CancelOutcome(result, refusal, obj, request)
        try:
            request = _new_request(target, key, actor, reason, gw, bulk)
        except IntegrityError:
            # The same key (a double submit that lost the race) or another
            # cancel of this object got in first.
            previous = CancelRequest.objects.filter(idempotency_key=key).first()
            if previous is not None:
                return _replay(target, previous)
            message = "Another cancel of this item is in flight right now."
            return CancelOutcome(ALREADY_REQUESTED, message, obj)

    # --- step 3: the call -----------------------------------------------------------
    try:
        answer = target.call(gw, obj, key, reason, actor)
    except Exception as exc:  # noqa: BLE001 - never leave the request open and unaudited
        answer = gateway.transport_failure(exc)
    if answer.outcome in (
        gateway.ACCEPTED,
        gateway.ALREADY_CLOSED,
        gateway.NOT_CANCELLABLE,
        gateway.UNCERTAIN,
    ):
        # "The API is truth": read back what the object is now.
        try:
            target.reread(gw, obj)
        except Exception as exc:  # noqa: BLE001 - a failed re-read must not lose the answer
            answer = GatewayAnswer(
                answer.outcome,
                f"{answer.message} (The re-read failed: {type(exc).__name__}.)",
                answer.http_status,
                answer.retry_after,
                answer.upstream,
            )

    # --- step 4: apply and record ---------------------------------------------------
    with transaction.atomic():
        obj = target.load()
        after = target.summary(obj)
        result, message = _result_of(target, obj, answer)
        request.state = STATE_FOR_RESULT[result]
        request.result = result
        request.message = message
        request.upstream_status = answer.http_status
        request.upstream = {"outcome": answer.outcome, **answer.upstream}
        request.finished_at = timezone.now()
        request.save()
        _audit(target, actor, request, before, after, answer)
    return CancelOutcome(result, message, obj, request, answer)


def _result_of(target: CancelTarget, obj: Any, answer: GatewayAnswer) -> tuple[str, str]:
    if answer.outcome == gateway.ACCEPTED:
        if target.is_cancelled(obj):
            return CANCELLED, answer.message
        if target.refusal(obj) is not None:
            # Accepted upstream, but the re-read shows it ended another way.
            summary = target.summary(obj)
            now = summary.get("raw_state") or summary.get("raw_status")
            return CANCEL_REQUESTED, (
                f"{answer.message} The re-read shows it is now {now!r}: it ended before "
                "the cancel took hold."
            )
        return CANCEL_REQUESTED, answer.message
    if answer.outcome == gateway.ALREADY_CLOSED:
        return REFUSED, answer.message
    if answer.outcome in (gateway.NOT_CANCELLABLE, gateway.NOT_FOUND, gateway.RATE_LIMITED):
        return REFUSED if answer.outcome == gateway.NOT_CANCELLABLE else FAILED, answer.message
    if answer.outcome == gateway.NOT_SENT:
        return NOT_SENT, answer.message
    if answer.outcome == gateway.UNCERTAIN:
        return UNCERTAIN, answer.message
    return FAILED, answer.message


def _open_request(target: CancelTarget) -> CancelRequest | None:
    return CancelRequest.objects.filter(
        object_kind=target.kind,
        protocol=target.protocol,
        object_id=target.object_id,
        state=CancelRequest.State.OPEN,
    ).first()


def _record(
    target: CancelTarget,
    key: str,
    actor: Actor,
    reason: str,
    gw: Gateway,
    bulk: Any,
    result: str,
    message: str,
    before: dict[str, Any],
    after: dict[str, Any],
) -> CancelRequest | None:
    """A refusal decided before any call: recorded and audited, nothing sent."""
    try:
        request = _new_request(
            target,
            key,
            actor,
            reason,
            gw,
            bulk,
            state=STATE_FOR_RESULT[result],
            result=result,
            message=message,
            finished_at=timezone.now(),
        )
    except IntegrityError:
        request = None
    _audit_attempt(target, actor, key, reason, gw.name, result, message, before, after, None, bulk)
    return request


def _new_request(
    target: CancelTarget,
    key: str,
    actor: Actor,
    reason: str,
    gw: Gateway,
    bulk: Any,
    **fields: Any,
) -> CancelRequest:
    """Insert the request row in its own savepoint (IntegrityError = raced)."""
    with transaction.atomic():
        return CancelRequest.objects.create(
            idempotency_key=key,
            object_kind=target.kind,
            protocol=target.protocol,
            object_id=target.object_id,
            requested_by=actor.name,
            reason=reason,
            gateway=gw.name,
            bulk=bulk,
            **fields,
        )


def _audit_attempt(
    target: CancelTarget,
    actor: Actor,
    key: str,
    reason: str,
    gateway_name: str,
    result: str,
    message: str,
    before: dict[str, Any],
    after: dict[str, Any],
    upstream: dict[str, Any] | None,
    bulk: Any,
) -> None:
    """The one audit entry every cancel attempt writes."""
    audit.record(
        actor,
        f"{target.kind}.cancel",
        target.kind,
        target.object_id,
        before=before,
        after=after,
        reason=reason,
        detail={
            "result": result,
            "message": message,
            "protocol": target.protocol,
            "idempotency_key": key,
            "gateway": gateway_name,
            "upstream": upstream,
            "bulk": getattr(bulk, "pk", bulk),
        },
    )


def _audit(
    target: CancelTarget,
    actor: Actor,
    request: CancelRequest,
    before: dict[str, Any],
    after: dict[str, Any],
    answer: GatewayAnswer,
) -> None:
    _audit_attempt(
        target,
        actor,
        request.idempotency_key,
        request.reason,
        request.gateway,
        request.result,
        request.message,
        before,
        after,
        {"status": answer.http_status, **request.upstream},
        request.bulk_id,
    )


def _replay(target: CancelTarget, previous: CancelRequest) -> CancelOutcome:
    """The same key again (double click, client retry): the first answer, no new call."""
    obj = target.load(lock=False)
    if previous.state == CancelRequest.State.OPEN:
        return CancelOutcome(
            ALREADY_REQUESTED,
            "This cancel is already being sent; it was not sent twice.",
            obj,
            previous,
            replayed=True,
        )
    return CancelOutcome(previous.result or REFUSED, previous.message, obj, previous, replayed=True)
