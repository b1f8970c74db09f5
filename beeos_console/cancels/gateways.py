"""Where cancels go: BeeOS itself (through the official SDKs) or, in the demo, the mirror.

A gateway answers every call with a ``GatewayAnswer`` in plain words. The
line that matters most is *dispatch*: a failure before the request left us
is safe to retry; a timeout or lost connection after it may have reached the
agent or device, so it is "uncertain" and never resent.
"""

from __future__ import annotations

import json
import socket
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.db import DatabaseError, connection, transaction
from django.utils import timezone
from django.utils.module_loading import import_string
from django.utils.translation import gettext, gettext_lazy

from beeos_console.mirror import registry

if TYPE_CHECKING:
    from beeos_console.auditlog.services import Actor
    from beeos_console.cancels.engine import CancelTarget

# Outcomes (the "result" of a gateway call).
ACCEPTED = "accepted"  # the cancel took effect or was accepted upstream
ALREADY_CLOSED = "already_closed"  # 409: the object had already ended
NOT_CANCELLABLE = "not_cancellable"  # upstream refused (A2A -32002, OPERATION_NOT_CANCELLABLE)
NOT_FOUND = "not_found"
RATE_LIMITED = "rate_limited"
NOT_SENT = "not_sent"  # failed before dispatch: safe to retry
UNCERTAIN = "uncertain"  # lost after dispatch: never resend blindly
FAILED = "failed"  # any other upstream error

# How long a cancel waits for a row lock in our own database before giving up. A
# longer wait (e.g. behind a big ingest) ends as "not sent", which is safe to retry.
LOCK_TIMEOUT = "5s"


@dataclass(frozen=True)
class GatewayAnswer:
    outcome: str
    message: str
    http_status: int | None = None
    retry_after: float | None = None
    upstream: dict[str, Any] = field(default_factory=dict)

    @property
    def dispatched(self) -> bool:
        return self.outcome != NOT_SENT


class Gateway(ABC):
    """Override per upstream; the engine in ``cancels.engine`` drives it.

    ``cancel`` and ``reread`` are what the engine calls; by default they ask
    the cancel target which of the per-kind methods below applies.
    """

    name: str = "gateway"
    label: str = gettext_lazy("Gateway")

    def cancel(
        self, target: CancelTarget, obj: Any, key: str, reason: str, actor: Actor
    ) -> GatewayAnswer:
        return target.call(self, obj, key, reason, actor)

    def reread(self, target: CancelTarget, obj: Any) -> None:
        target.reread(self, obj)

    @abstractmethod
    def cancel_task(self, task: Any, *, idempotency_key: str, reason: str) -> GatewayAnswer: ...

    @abstractmethod
    def cancel_operation(
        self, op: Any, *, idempotency_key: str, reason: str, requested_by: str
    ) -> GatewayAnswer: ...

    @abstractmethod
    def reread_task(self, task: Any) -> None:
        """Refresh the mirrored task from the source of truth."""

    @abstractmethod
    def reread_operation(self, op: Any) -> None:
        """Refresh the mirrored operation from the source of truth."""


class LocalGateway(Gateway):
    """The demo: no upstream; each kind's cancel target applies its own cancel to the mirror."""

    name = "local"
    label = gettext_lazy("Local (demo)")

    def cancel_task(self, task: Any, *, idempotency_key: str, reason: str) -> GatewayAnswer:
        return self._apply("task", task, requested_by="", reason=reason)

    def cancel_operation(
        self, op: Any, *, idempotency_key: str, reason: str, requested_by: str
    ) -> GatewayAnswer:
        return self._apply("operation", op, requested_by=requested_by, reason=reason)

    def _apply(self, kind: str, obj: Any, *, requested_by: str, reason: str) -> GatewayAnswer:
        target = registry.get(kind).cancel_target.for_object(obj)
        try:
            with transaction.atomic():
                bounded_lock_wait()
                applied = target.apply_local_cancel(
                    obj, requested_by=requested_by, reason=reason, at=timezone.now()
                )
        except DatabaseError as exc:
            return database_failure(exc)
        if not applied:
            return _ended_meanwhile()
        return GatewayAnswer(
            ACCEPTED, gettext("Cancelled in the mirror (local gateway: no upstream call).")
        )

    def reread_task(self, task: Any) -> None:
        """The mirror is the source of truth here: nothing to re-read."""

    def reread_operation(self, op: Any) -> None:
        """The mirror is the source of truth here: nothing to re-read."""


def _ended_meanwhile() -> GatewayAnswer:
    return GatewayAnswer(
        ALREADY_CLOSED,
        gettext(
            "Not cancelled: it ended (a newer snapshot arrived) before the cancel applied. "
            "Its final state stands."
        ),
    )


def bounded_lock_wait() -> None:
    """Inside a transaction: wait at most LOCK_TIMEOUT for row locks (PostgreSQL)."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT set_config('lock_timeout', %s, true)", [LOCK_TIMEOUT])


def database_failure(exc: BaseException) -> GatewayAnswer:
    """Our own database failed: nothing left the console (never "uncertain")."""
    return GatewayAnswer(
        NOT_SENT,
        gettext(
            "Not sent: the console's own database failed before the cancel took effect "
            "anywhere (%(error)s), so nothing happened. Safe to retry."
        )
        % {"error": type(exc).__name__},
        upstream={"error": type(exc).__name__, "where": "console database"},
    )


def upstream_configured() -> bool:
    """Is a BeeOS upstream configured (else cancels apply to the mirror: the demo)?"""
    return bool(settings.BEEOS_API_URL)


def active_gateway() -> Gateway:
    """The gateway class named in settings: BeeOS's when an upstream is configured."""
    path = (
        settings.CONSOLE_UPSTREAM_GATEWAY
        if upstream_configured()
        else settings.CONSOLE_LOCAL_GATEWAY
    )
    return import_string(path)()


# --- classifying transport failures ------------------------------------------

_BEFORE_DISPATCH = (
    "NewConnectionError",
    "ConnectTimeoutError",
    "NameResolutionError",
    "ConnectionRefusedError",
    "LocationParseError",
    "URLError",
)
_AFTER_DISPATCH = (
    "ReadTimeoutError",
    "ProtocolError",
    "RemoteDisconnected",
    "IncompleteRead",
    "ConnectionResetError",
    "BrokenPipeError",
    "TimeoutError",
    "timeout",
)


def _chain(exc: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in seen:
        seen.append(current)
        reason = getattr(current, "reason", None)
        current = (
            reason
            if isinstance(reason, BaseException)
            else (current.__cause__ or current.__context__)
        )
    return seen


def transport_failure(exc: BaseException) -> GatewayAnswer:
    """Before dispatch: safe to retry. After dispatch, or unsure: uncertain."""
    names = [type(e).__name__ for e in _chain(exc)]
    if any(n in _BEFORE_DISPATCH for n in names) and not any(
        n in ("ReadTimeoutError", "RemoteDisconnected", "IncompleteRead") for n in names
    ):
        return GatewayAnswer(
            NOT_SENT,
            gettext("Not sent: BeeOS could not be reached, so nothing happened. Safe to retry."),
            upstream={"error": names[-1]},
        )
    if any(n in _AFTER_DISPATCH for n in names) or isinstance(exc, socket.timeout):
        return GatewayAnswer(
            UNCERTAIN,
            gettext(
                "Outcome uncertain — not resent. The request reached BeeOS but no answer came "
                "back; it may have taken effect. The object was re-read; check it before acting."
            ),
            upstream={"error": names[-1]},
        )
    return GatewayAnswer(
        UNCERTAIN,
        gettext(
            "Outcome uncertain — not resent. The request failed in an unexpected way after it "
            "may have been sent (%(error)s)."
        )
        % {"error": names[-1]},
        upstream={"error": names[-1]},
    )


def body_json(text: str | bytes | None) -> dict[str, Any]:
    if not text:
        return {}
    try:
        value = json.loads(text)
    except (ValueError, TypeError):
        return {"body": str(text)[:500]}
    return value if isinstance(value, dict) else {"body": value}
