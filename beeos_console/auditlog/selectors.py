"""Reads of the audit log that pages need beyond its list (``views.AuditLogView``)."""

from __future__ import annotations

from beeos_console.auditlog.models import AuditEntry

TRAIL_ROWS = 50


def audit_trail(object_kind: str, object_id: str, *, limit: int = TRAIL_ROWS) -> list[AuditEntry]:
    """The newest ``limit`` audit entries about one object (kind + id), newest first.

    One query on the (object_kind, object_id, -at) index; every app's detail page
    shows its object's trail with it.
    """
    return list(AuditEntry.objects.filter(object_kind=object_kind, object_id=object_id)[:limit])
