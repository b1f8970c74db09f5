"""Writing audit entries: the one way anything lands in the audit log."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from beeos_console.auditlog.models import AuditEntry


@dataclass(frozen=True, slots=True)
class Actor:
    """Who is acting: a console user, a feeder (ingest) or the system itself."""

    name: str
    kind: str = AuditEntry.ActorKind.USER

    @classmethod
    def system(cls, name: str = "system") -> Actor:
        return cls(name=name, kind=AuditEntry.ActorKind.SYSTEM)

    @classmethod
    def feeder(cls, name: str) -> Actor:
        return cls(name=name, kind=AuditEntry.ActorKind.FEEDER)

    @classmethod
    def of_user(cls, user: Any) -> Actor:
        return cls(name=user.get_username(), kind=AuditEntry.ActorKind.USER)


def entry(
    actor: Actor,
    action: str,
    object_kind: str,
    object_id: str,
    *,
    before: dict[str, Any] | None = None,
    after: dict[str, Any] | None = None,
    reason: str = "",
    detail: dict[str, Any] | None = None,
) -> AuditEntry:
    """One unsaved audit entry (the batch ingest path inserts many at once)."""
    return AuditEntry(
        actor=actor.name,
        actor_kind=actor.kind,
        action=action,
        object_kind=object_kind,
        object_id=object_id,
        before=before or {},
        after=after or {},
        reason=reason,
        detail=detail or {},
    )


def record(
    actor: Actor, action: str, object_kind: str, object_id: str, **fields: Any
) -> AuditEntry:
    """Append one audit entry (``fields`` as for ``entry``); call inside the transaction
    that made the change."""
    new = entry(actor, action, object_kind, object_id, **fields)
    new.save(force_insert=True)
    return new
