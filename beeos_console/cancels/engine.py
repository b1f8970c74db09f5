"""The cancel engine shared by tasks and runtime operations.

1. Same idempotency key seen before -> the recorded answer, no new call.
2. In one transaction, with the object's row locked: refuse when the rules
   say so (terminal, effect committed, outcome unknown), or when another
   cancel of the same object is in flight; else record an *open* request.
3. Call the gateway (outside any transaction: never hold locks on the network).
4. In a second transaction, with the row locked again: apply the answer (the
   terminal state wins a race with ingest), close the request, audit it.
Every attempt, whatever its end, writes exactly one audit entry.

Messages are said in the active language when they are made (the operator's, for a
cancel from a page or the API; the default language in the worker) and stored as
said; the ``result`` codes beside them are the machine-readable part.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import logging
import uuid
from abc import ABC, abstractmethod
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from django.db import DatabaseError, IntegrityError, connection, transaction
from django.utils import timezone
from django.utils.translation import gettext
from django_tasks import task as background_task

from beeos_console.auditlog import services as auditlog
from beeos_console.auditlog.services import Actor
from beeos_console.cancels import gateways
from beeos_console.cancels.gateways import Gateway, GatewayAnswer
from beeos_console.cancels.models import CancelRequest
from beeos_console.mirror import registry
from beeos_console.mirror.edge import unstorable

logger = logging.getLogger(__name__)

MAX_REASON = 2000

# Results an operator sees (and the REST API returns).
CANCELLED = "cancelled"  # took effect (local gateway, or upstream confirmed on re-read)
CANCEL_REQUESTED = "cancel_requested"  # accepted upstream; the effect follows
REFUSED = "refused"
ALREADY_REQUESTED = "already_requested"
NOT_SENT = "not_sent"
UNCERTAIN = "uncertain"
FAILED = "failed"


@dataclass(frozen=True)
class ResultKind:
    """What one cancel result means everywhere it shows."""

    stored_state: str  # CancelRequest.state
    http_status: int  # the REST answer
    style: str  # the HTML message's CSS style (success / info / warning / error)


RESULTS: dict[str, ResultKind] = {
    CANCELLED: ResultKind(CancelRequest.State.ACCEPTED, 200, "success"),
    CANCEL_REQUESTED: ResultKind(CancelRequest.State.ACCEPTED, 202, "success"),
    REFUSED: ResultKind(CancelRequest.State.REFUSED, 409, "info"),
    ALREADY_REQUESTED: ResultKind(CancelRequest.State.REFUSED, 409, "info"),
    # Safe to retry: nothing left the console.
    NOT_SENT: ResultKind(CancelRequest.State.NOT_SENT, 503, "warning"),
    # Not resent: it may have taken effect.
    UNCERTAIN: ResultKind(CancelRequest.State.UNCERTAIN, 504, "warning"),
    FAILED: ResultKind(CancelRequest.State.FAILED, 502, "error"),
}
STATE_FOR_RESULT = {result: kind.stored_state for result, kind in RESULTS.items()}


class Refusal(str):
    """Why something may not be cancelled now: the words an operator reads.

    ``code`` groups refusals (bulk preview, metrics); ``summary`` is the short
    form a bulk preview lists. A ``str`` so that every message path takes it as is.
    """

    code: str
    summary: str

    def __new__(cls, words: str, *, code: str, summary: str = "") -> Refusal:
        refusal = super().__new__(cls, words)
        refusal.code = code
        refusal.summary = summary or words
        return refusal


class InvalidCancel(ValueError):
    """Bad input (no reason, bad key): nothing was recorded."""


class IdempotencyConflict(InvalidCancel):
    """The Idempotency-Key already names another request (user, object or body)."""


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

    @property
    def kind(self) -> ResultKind:
        return RESULTS[self.result]

    @property
    def upstream_error(self) -> dict[str, str] | None:
        """The A2A JSON-RPC error BeeOS answered (code and ErrorInfo reason), if any."""
        upstream = self.request.upstream if self.request is not None else {}
        if not upstream.get("a2a_code") and self.answer is not None:
            upstream = self.answer.upstream
        if not upstream.get("a2a_code"):
            return None
        return {
            "a2a_code": str(upstream["a2a_code"]),
            "reason": str(upstream.get("reason") or ""),
            "message": str(upstream.get("a2a_message") or ""),
        }


class CancelTarget(ABC):
    """What the engine needs to know about one kind of object."""

    kind: str

    def __init__(self, protocol: str, object_id: str) -> None:
        self.protocol = protocol
        self.object_id = object_id

    @abstractmethod
    def load(self, *, lock: bool = True) -> Any:
        """The object (row-locked with select_for_update when ``lock``), or None."""

    @classmethod
    def for_object(cls, obj: Any) -> CancelTarget:
        """The target naming ``obj`` (the engine reloads and locks it)."""
        return cls(getattr(obj, "protocol", ""), cls.object_id_of(obj))

    @staticmethod
    @abstractmethod
    def object_id_of(obj: Any) -> str: ...

    @abstractmethod
    def refusal(self, obj: Any) -> Refusal | None:
        """Why this object must not be cancelled now; None when it may (the kind's one rule)."""

    @abstractmethod
    def summary(self, obj: Any) -> dict[str, Any]:
        """Raw and product state, for the audit entry's before/after."""

    @abstractmethod
    def call(self, gw: Gateway, obj: Any, key: str, reason: str, actor: Actor) -> GatewayAnswer: ...

    @abstractmethod
    def reread(self, gw: Gateway, obj: Any) -> None: ...

    @abstractmethod
    def apply_local_cancel(
        self, obj: Any, *, requested_by: str, reason: str, at: dt.datetime
    ) -> bool:
        """Cancel in the mirror itself (no upstream: the demo). False when it ended meanwhile."""

    def already_requested(self, obj: Any) -> Refusal | None:
        """A cancel request the upstream already holds (operations carry one)."""
        return None

    def is_cancelled(self, obj: Any) -> bool:
        return getattr(obj, "status", "") == "cancelled"


def new_idempotency_key() -> str:
    return f"console-{uuid.uuid4()}"


def clean_reason(reason: Any) -> str:
    if not isinstance(reason, str) or not reason.strip():
        raise InvalidCancel(gettext("A reason is required: say why this is being cancelled."))
    if len(reason) > MAX_REASON:
        raise InvalidCancel(
            gettext("The reason is too long (%(length)s > %(max)s characters).")
            % {"length": len(reason), "max": MAX_REASON}
        )
    if unstorable(reason):
        raise InvalidCancel(
            gettext(
                "The reason contains a NUL character or an unpaired surrogate; "
                "write it as plain text."
            )
        )
    return reason.strip()


def clean_key(key: Any) -> str:
    if key in (None, ""):
        return new_idempotency_key()
    if not isinstance(key, str) or len(key) > 128 or not key.isprintable():
        raise InvalidCancel(
            gettext("The idempotency key must be printable text of at most 128 characters.")
        )
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
    gw = gw or gateways.active_gateway()
    # The same key sent concurrently: the later callers wait here for the first
    # request's answer, then replay it (one call, one audit entry).
    with _key_lock(key):
        previous = CancelRequest.objects.filter(idempotency_key=key).first()
        if previous is not None:
            _check_binding(previous, target, actor, reason)
            return _replay(target, previous)
        return _send(target, key, actor=actor, reason=reason, gw=gw, bulk=bulk)


@contextmanager
def _key_lock(key: str) -> Iterator[None]:
    """A session-level advisory lock on one idempotency key (held across the call:
    it is no row lock, so nothing else waits on it but the same key)."""
    lock_id = int.from_bytes(
        hashlib.sha256(f"cancel:{key}".encode()).digest()[:8], "big", signed=True
    )
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_lock(%s)", [lock_id])
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_unlock(%s)", [lock_id])


def _check_binding(
    previous: CancelRequest, target: CancelTarget, actor: Actor, reason: str
) -> None:
    """An Idempotency-Key belongs to one user, one object, one action and one body."""
    differs = [
        what
        for what, same in (
            (gettext("another user"), previous.requested_by == actor.name),
            (
                gettext("another object"),
                (previous.object_kind, previous.protocol, previous.object_id)
                == (target.kind, target.protocol, target.object_id),
            ),
            (gettext("another reason (request body)"), previous.reason == reason),
        )
        if not same
    ]
    if differs:
        raise IdempotencyConflict(
            gettext(
                "This Idempotency-Key was already used by %(differs)s: nothing was "
                "changed. Send a new key for a new request."
            )
            % {"differs": ", ".join(differs)}
        )


def _send(
    target: CancelTarget, key: str, *, actor: Actor, reason: str, gw: Gateway, bulk: Any
) -> CancelOutcome:
    """Steps 2 to 4 for a key seen for the first time."""
    # --- step 2: decide under the row lock ------------------------------------
    try:
        decided = _decide(target, key, actor, reason, gw, bulk)
    except DatabaseError as exc:
        # Our own database failed before anything was sent: "not sent", never uncertain.
        return _not_sent_by_database(target, key, actor, reason, gw, bulk, exc)
    if isinstance(decided, CancelOutcome):
        return decided
    obj, request, before = decided

    # --- step 3: the call -----------------------------------------------------------
    try:
        answer = gw.cancel(target, obj, key, reason, actor)
    except DatabaseError as exc:
        # Gateways touch our database only before dispatch (the local one *is* the
        # database and rolls back): nothing went out.
        answer = gateways.database_failure(exc)
    except Exception as exc:  # noqa: BLE001 - never leave the request open and unaudited
        answer = gateways.transport_failure(exc)
    if answer.outcome in (
        gateways.ACCEPTED,
        gateways.ALREADY_CLOSED,
        gateways.NOT_CANCELLABLE,
        gateways.UNCERTAIN,
    ):
        # "The API is truth": read back what the object is now.
        try:
            gw.reread(target, obj)
        except Exception as exc:  # noqa: BLE001 - a failed re-read must not lose the answer
            answer = GatewayAnswer(
                answer.outcome,
                gettext("%(message)s (The re-read failed: %(error)s.)")
                % {"message": answer.message, "error": type(exc).__name__},
                answer.http_status,
                answer.retry_after,
                answer.upstream,
            )

    # --- step 4: apply and record ---------------------------------------------------
    try:
        with transaction.atomic():
            obj = target.load()
            result, message = _result_of(target, obj, answer)
            _close(target, actor, request, before, target.summary(obj), answer, result, message)
    except DatabaseError:
        # The answer came back but our database failed recording it. Say what BeeOS
        # answered (never "not sent": the call went out), and close the request
        # without the object's lock so it does not block the next cancel.
        logger.exception(
            "recording the cancel answer for %s %r failed", target.kind, target.object_id
        )
        obj = target.load(lock=False)
        result, message = _result_of(target, obj, answer)
        message = gettext(
            "%(message)s (The console's database failed while recording this answer.)"
        ) % {"message": message}
        with transaction.atomic():
            _close(target, actor, request, before, target.summary(obj), answer, result, message)
    return CancelOutcome(result, message, obj, request, answer)


def _close(
    target: CancelTarget,
    actor: Actor,
    request: CancelRequest,
    before: dict[str, Any],
    after: dict[str, Any],
    answer: GatewayAnswer,
    result: str,
    message: str,
) -> None:
    """Close the open request with the gateway's answer and write the attempt's audit entry."""
    request.state = STATE_FOR_RESULT[result]
    request.result = result
    request.message = message
    request.upstream_status = answer.http_status
    request.upstream = {"outcome": answer.outcome, **answer.upstream}
    request.finished_at = timezone.now()
    if result == UNCERTAIN:
        schedule_rechecks(request)
    request.save()
    _audit(target, actor, request, before, after, answer)


def _decide(
    target: CancelTarget, key: str, actor: Actor, reason: str, gw: Gateway, bulk: Any
) -> CancelOutcome | tuple[Any, CancelRequest, dict[str, Any]]:
    """Step 2: an outcome when no call is to be made, else (object, open request, before)."""
    with transaction.atomic():
        gateways.bounded_lock_wait()
        obj = target.load()
        if obj is None:
            raise LookupError(f"No {target.kind} {target.object_id!r} is mirrored.")
        before = target.summary(obj)
        refusal = target.refusal(obj)
        result = REFUSED
        if refusal is None:
            existing = target.already_requested(obj)
            if existing is None and _open_request(target) is not None:
                existing = gettext("Another cancel of this item is in flight right now.")
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
            message = gettext("Another cancel of this item is in flight right now.")
            return CancelOutcome(ALREADY_REQUESTED, message, obj)
    return obj, request, before


def _not_sent_by_database(
    target: CancelTarget,
    key: str,
    actor: Actor,
    reason: str,
    gw: Gateway,
    bulk: Any,
    exc: DatabaseError,
) -> CancelOutcome:
    """Step 2 failed in our database: nothing was sent. Record it if the database lets us."""
    answer = gateways.database_failure(exc)
    request = None
    try:
        with transaction.atomic():
            obj = target.load(lock=False)
            state = target.summary(obj) if obj is not None else {}
            upstream = {"outcome": answer.outcome, **answer.upstream}
            request = _record(
                target,
                key,
                actor,
                reason,
                gw,
                bulk,
                NOT_SENT,
                answer.message,
                state,
                state,
                upstream,
            )
    except DatabaseError:
        # Still failing: the operator is told, the log keeps it (the audit cannot).
        logger.exception("cancel of %s %r not sent and not recorded", target.kind, target.object_id)
        obj = None
    return CancelOutcome(NOT_SENT, answer.message, obj, request, answer)


def _result_of(target: CancelTarget, obj: Any, answer: GatewayAnswer) -> tuple[str, str]:
    if answer.outcome == gateways.ACCEPTED:
        if target.is_cancelled(obj):
            return CANCELLED, answer.message
        if target.refusal(obj) is not None:
            # Accepted upstream, but the re-read shows it ended another way.
            summary = target.summary(obj)
            now = summary.get("raw_state") or summary.get("raw_status")
            return CANCEL_REQUESTED, gettext(
                "%(message)s The re-read shows it is now %(state)s: it ended before "
                "the cancel took hold."
            ) % {"message": answer.message, "state": repr(now)}
        return CANCEL_REQUESTED, answer.message
    if answer.outcome == gateways.ALREADY_CLOSED:
        return REFUSED, answer.message
    if answer.outcome in (gateways.NOT_CANCELLABLE, gateways.NOT_FOUND, gateways.RATE_LIMITED):
        return REFUSED if answer.outcome == gateways.NOT_CANCELLABLE else FAILED, answer.message
    if answer.outcome == gateways.NOT_SENT:
        return NOT_SENT, answer.message
    if answer.outcome == gateways.UNCERTAIN:
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
    upstream: dict[str, Any] | None = None,
) -> CancelRequest | None:
    """An end decided before any call (refused, not sent): recorded and audited."""
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
            upstream=upstream or {},
            finished_at=timezone.now(),
        )
    except IntegrityError:
        request = None
    _audit_attempt(
        target, actor, key, reason, gw.name, result, message, before, after, upstream, bulk
    )
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
    auditlog.record(
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
            gettext("This cancel is already being sent; it was not sent twice."),
            obj,
            previous,
            replayed=True,
        )
    message = previous.message
    if previous.resolved_at is not None:
        message += " " + gettext("A later re-read showed it %(resolution)s.") % {
            "resolution": previous.get_resolution_display().lower()
        }
    return CancelOutcome(previous.result or REFUSED, message, obj, previous, replayed=True)


# --- uncertain cancels: re-read until the object shows what happened --------------------

# After the uncertain answer: 1, 5, 15 and 60 minutes, then daily for a week. After the
# last re-read an unresolved cancel stays open, flagged as given up (manual review).
RECHECK_AFTER: tuple[dt.timedelta, ...] = (
    *(dt.timedelta(minutes=m) for m in (1, 5, 15, 60)),
    *(dt.timedelta(days=d) for d in range(1, 8)),
)
RECHECK_BATCH = 100  # due cancels one sweep looks at
RECHECK_RETRY = dt.timedelta(minutes=5)  # after a worker run that blew up
RESOLVER = Actor.system("cancel-resolver")

# What one re-read ended in: a CancelRequest.Resolution value, or one of these.
STILL_OPEN = "open"  # still running: the next re-read is scheduled
GAVE_UP = "gave_up"  # still running after the last re-read: stays open, flagged
NOT_DUE = "not_due"  # nothing to do (not due, already resolved, or another run got it)


@dataclass
class Recheck:
    request_id: int
    object_kind: str
    object_id: str
    outcome: str
    message: str = ""


def schedule_rechecks(request: CancelRequest) -> None:
    """Called inside the transaction that records an uncertain answer (saved by the caller)."""
    request.checks = 0
    request.next_check_at = request.finished_at + RECHECK_AFTER[0]
    _enqueue_recheck(request)


def _next_slot(request: CancelRequest, now: dt.datetime) -> dt.datetime | None:
    """The first scheduled re-read after ``now`` (slots a stopped worker missed are
    skipped, not replayed in a burst); None once the week is over."""
    return next(
        (
            request.finished_at + after
            for after in RECHECK_AFTER
            if request.finished_at + after > now
        ),
        None,
    )


def _enqueue_recheck(request: CancelRequest) -> None:
    """The worker's next run for this request (the database backend commits it with us)."""
    run = recheck_uncertain_cancel.using(run_after=request.next_check_at)
    run.enqueue(request.pk, request.checks)


def _resolution_of(target: CancelTarget, obj: Any) -> str | None:
    """What the object shows now: cancelled, completed, failed, or None (still running)."""
    if obj is None:
        return None  # gone from the mirror: keep asking, never guess
    if target.is_cancelled(obj):
        return CancelRequest.Resolution.CANCELLED
    status = getattr(obj, "status", "")
    if status in (CancelRequest.Resolution.COMPLETED, CancelRequest.Resolution.FAILED):
        return status
    return None


def target_for(request: CancelRequest) -> CancelTarget:
    """The request's object as a CancelTarget (each app registers its kind)."""
    kind = registry.get(request.object_kind)
    if kind is None or kind.cancel_target is None:
        raise LookupError(f"No cancellable kind {request.object_kind!r} is registered.")
    return kind.cancel_target(request.protocol, request.object_id)


def recheck(
    request_id: int,
    *,
    now: dt.datetime | None = None,
    gw: Gateway | None = None,
    expected_checks: int | None = None,
) -> Recheck:
    """Re-read one uncertain cancel's object if it is due, and record what it shows.

    ``expected_checks`` (the worker's task) makes a stale or duplicate run a no-op: only
    the run that advanced the schedule enqueues the next one.
    """
    now = now or timezone.now()
    request = CancelRequest.objects.filter(CancelRequest.OPEN_UNCERTAIN, pk=request_id).first()
    if request is None or not _due(request, now) or expected_checks not in (None, request.checks):
        kind, object_id = (request.object_kind, request.object_id) if request else ("", "")
        return Recheck(request_id, kind, object_id, NOT_DUE)
    target = target_for(request)
    gw = gw or gateways.active_gateway()
    obj = target.load(lock=False)
    before = target.summary(obj) if obj is not None else {}
    reread_error = ""
    if obj is not None:
        try:
            gw.reread(target, obj)  # on the network: no transaction, no locks held
        except Exception as exc:  # noqa: BLE001 - a failed re-read is a re-read that told nothing
            reread_error = type(exc).__name__
    with transaction.atomic():
        # Another run (worker or sweep) may have recorded this slot meanwhile.
        request = CancelRequest.objects.select_for_update().filter(pk=request_id).first()
        if request is None:
            return Recheck(request_id, target.kind, target.object_id, NOT_DUE)
        stale = expected_checks is not None and request.checks != expected_checks
        if stale or request.resolved_at is not None or not _due(request, now):
            return Recheck(request_id, request.object_kind, request.object_id, NOT_DUE)
        return _record_recheck(target, request, now, before, reread_error)


def _due(request: CancelRequest, now: dt.datetime) -> bool:
    return request.next_check_at is not None and request.next_check_at <= now


def _record_recheck(
    target: CancelTarget,
    request: CancelRequest,
    now: dt.datetime,
    before: dict[str, Any],
    reread_error: str,
) -> Recheck:
    obj = target.load(lock=False)
    after = target.summary(obj) if obj is not None else {}
    resolution = _resolution_of(target, obj)
    request.checks += 1
    request.last_checked_at = now
    raw = after.get("raw_state") or after.get("raw_status") or "?"
    next_slot = _next_slot(request, now)
    if resolution is not None:
        request.resolved_at = now
        request.resolution = resolution
        request.next_check_at = None
        outcome = resolution
        if resolution == CancelRequest.Resolution.CANCELLED:
            message = gettext(
                "Resolved: the re-read shows it cancelled (%(raw)s); the cancel took effect."
            ) % {"raw": repr(raw)}
        else:
            message = gettext(
                "Resolved: the re-read shows it %(status)s (%(raw)s); it ended before "
                "the cancel took."
            ) % {"status": resolution, "raw": repr(raw)}
        if after.get("reason") == "effect_committed":
            message += " " + gettext("Its effect had already happened (effectState committed).")
        if after.get("outcome_certainty") == "uncertain":
            # e.g. an operation now outcome_unknown: ended, but its effect is not known.
            message += " " + gettext(
                "Its own outcome is uncertain: review it by hand, do not replay."
            )
    elif next_slot is not None:
        request.next_check_at = next_slot
        outcome = STILL_OPEN
        message = gettext("Still %(raw)s at re-read %(checks)s; the next re-read is scheduled.") % {
            "raw": repr(raw),
            "checks": request.checks,
        }
    else:
        request.next_check_at = None
        request.gave_up_at = now
        outcome = GAVE_UP
        message = gettext(
            "Still %(raw)s after %(checks)s re-reads over a week: no more automatic "
            "re-reads. The outcome stays uncertain; check it with BeeOS by hand."
        ) % {"raw": repr(raw), "checks": request.checks}
    if reread_error:
        message += " " + gettext(
            "(The last re-read failed: %(error)s; this is the mirror's state.)"
        ) % {"error": reread_error}
    request.save()
    if outcome == STILL_OPEN:
        _enqueue_recheck(request)
    else:
        auditlog.record(
            RESOLVER,
            f"{request.object_kind}.cancel_" + ("gave_up" if outcome == GAVE_UP else "resolved"),
            request.object_kind,
            request.object_id,
            before=before,
            after=after,
            reason=request.reason,
            detail={
                "resolution": request.resolution,
                "message": message,
                "protocol": request.protocol,
                "idempotency_key": request.idempotency_key,
                "cancel_request": request.pk,
                "requested_by": request.requested_by,
                "uncertain_since": request.finished_at.isoformat(),
                "checks": request.checks,
                "reread_error": reread_error or None,
            },
        )
    return Recheck(request.pk, request.object_kind, request.object_id, outcome, message)


def resolve_uncertain_cancels(
    *, now: dt.datetime | None = None, gw: Gateway | None = None, limit: int = RECHECK_BATCH
) -> list[Recheck]:
    """One sweep: re-read every due uncertain cancel (oldest due first, at most ``limit``)."""
    now = now or timezone.now()
    due = list(
        CancelRequest.objects.filter(CancelRequest.OPEN_UNCERTAIN, next_check_at__lte=now)
        .order_by("next_check_at")
        .values_list("pk", flat=True)[:limit]
    )
    return [recheck(pk, now=now, gw=gw) for pk in due]


@background_task()
def recheck_uncertain_cancel(request_id: int, checks: int) -> str:
    """The worker side: one re-read when due; the run that advances the schedule enqueues
    the next, so each uncertain cancel has one live chain that ends when it resolves."""
    try:
        outcome = recheck(request_id, expected_checks=checks).outcome
        if outcome == NOT_DUE:
            _keep_chain(request_id, checks)
        return outcome
    except Exception:
        # Try again later rather than lose the chain (same ``checks``: at most one
        # survives), but only within the schedule's week: a lasting fault must not loop.
        now = timezone.now()
        since = (
            CancelRequest.objects.filter(CancelRequest.OPEN_UNCERTAIN, pk=request_id)
            .values_list("finished_at", flat=True)
            .first()
        )
        if since is not None and now < since + RECHECK_AFTER[-1]:
            run = recheck_uncertain_cancel.using(run_after=now + RECHECK_RETRY)
            run.enqueue(request_id, checks)
        raise


def _keep_chain(request_id: int, checks: int) -> None:
    """A run that woke before its slot (clocks differ) waits for it instead of ending."""
    request = CancelRequest.objects.filter(
        CancelRequest.OPEN_UNCERTAIN, pk=request_id, checks=checks, next_check_at__gt=timezone.now()
    ).first()
    if request is not None:
        _enqueue_recheck(request)
