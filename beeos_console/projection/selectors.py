"""Reads the projection audit pages need: bounded, indexed, never a full scan."""

from __future__ import annotations

from typing import Any

from django.db.models import Count

from beeos_console.core.pagination import CAPPED_COUNT
from beeos_console.mirror.registry import MirroredKind
from beeos_console.mirror.states import PROJECTION_VERSION, UNMAPPED
from beeos_console.projection.models import ProjectionJob
from operations.models import RuntimeOperation
from tasks.models import Message, Task

LIVE_UNMAPPED_ROWS = 50


def live_unmapped() -> list[dict[str, Any]]:
    """Unmapped values right now (indexed on status; bounded by the unmapped rows)."""
    rows = []
    for kind, model, raw_field, protocol_field in (
        ("task", Task, "raw_state", "protocol"),
        ("operation", RuntimeOperation, "raw_status", None),
        ("message", Message, "state", None),
    ):
        fields = [raw_field] + ([protocol_field] if protocol_field else [])
        for group in (
            model.objects.filter(status=UNMAPPED)
            .values(*fields)
            .annotate(n=Count("id"))
            .order_by("-n")[:LIVE_UNMAPPED_ROWS]
        ):
            rows.append(
                {
                    "kind": kind,
                    "protocol": group.get(protocol_field, kind) if protocol_field else kind,
                    "raw_value": group[raw_field],
                    "count": group["n"],
                }
            )
    return rows


def outdated_counts() -> dict[str, str]:
    """Rows stamped by an older table version (capped count: never a full scan)."""
    result = {}
    for kind, model in (("task", Task), ("message", Message), ("operation", RuntimeOperation)):
        n = model.objects.filter(projection_version__lt=PROJECTION_VERSION)[: CAPPED_COUNT + 1]
        count = n.count()
        result[kind] = f"{CAPPED_COUNT:,}+" if count > CAPPED_COUNT else f"{count:,}"
    return result


def latest_finished_job(kind: str) -> ProjectionJob | None:
    """The newest finished job of ``kind`` (audit, dry run), whose report the page shows."""
    return ProjectionJob.objects.filter(kind=kind, state="finished").order_by("-created_at").first()


def running_jobs(limit: int = 5) -> list[ProjectionJob]:
    """Jobs queued or running, newest first."""
    running = ProjectionJob.objects.filter(state__in=("queued", "running"))
    return list(running.order_by("-created_at")[:limit])


def recent_jobs(limit: int = 10) -> list[ProjectionJob]:
    """The newest jobs of any kind and state."""
    return list(ProjectionJob.objects.order_by("-created_at")[:limit])


def object_pk(kind: MirroredKind, object_id: str, protocol: str = "") -> int | None:
    """The primary key of one mirrored object named by id (and protocol, for tasks)."""
    qs = kind.model.objects.filter(**{kind.id_field: object_id})
    if protocol and hasattr(kind.model, "protocol"):
        qs = qs.filter(protocol=protocol)
    return qs.values_list("pk", flat=True).first()
