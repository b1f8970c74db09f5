"""Re-projection: rewrite stored projections from today's rules, audited per change.

``reproject_row`` is the one write path (used for one object and in bulk);
``changes`` streams what a re-projection would change (the dry run). Rows
stamped by an older ``PROJECTION_VERSION`` are re-stamped even when their
values agree. After a table change, ``manage.py reproject --apply --outdated``
(and ``seed_demo`` on a demo database) re-projects the rows the old tables
stamped.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

from django.db import transaction
from django.utils import timezone
from django_tasks import task as background_task

from beeos_console.auditlog import services as auditlog
from beeos_console.auditlog.services import Actor
from beeos_console.mirror import agent_counters, counters, registry
from beeos_console.mirror.states import PROJECTION_VERSION, Projection
from beeos_console.projection import audit as projection_audit
from beeos_console.projection.models import ProjectionJob

CHUNK = 2000
SHOWN_CHANGES = 200


def expected_for(kind: str, obj: Any) -> Projection:
    return registry.get(kind).expected_projection(obj)


def object_id(kind: str, obj: Any) -> str:
    return registry.get(kind).object_id(obj)


def diff(kind: str, obj: Any) -> dict[str, list[Any]]:
    """Stored vs expected for every projection field that would change."""
    expected = expected_for(kind, obj)
    changes = {name: [old, new] for name, (old, new) in obj.projection_drift(expected).items()}
    if not changes and obj.projection_version != PROJECTION_VERSION:
        changes["projection_version"] = [obj.projection_version, PROJECTION_VERSION]
    return changes


def reproject_row(kind: str, pk: int, *, actor: Actor) -> dict[str, list[Any]]:
    """Re-project one row under a row lock; audit the change. Returns what changed."""
    mirrored = registry.get(kind)
    model = mirrored.model
    with transaction.atomic():
        obj = model.objects.select_for_update().get(pk=pk)
        changes = diff(kind, obj)
        if not changes:
            return {}
        old_status = obj.status
        counted_before = counters.keys_of(mirrored.counters, obj)
        # Only kinds with per-agent counters name agents (an operation has no agent_id).
        agents_before = agent_counters.state_of(obj) if mirrored.agent_counted else None
        for name, value in expected_for(kind, obj).as_fields().items():
            setattr(obj, name, value)
        obj.save(update_fields=[*expected_for(kind, obj).as_fields(), "mirrored_at"])
        counters.on_row_changed(mirrored.counters, counted_before, obj)
        if mirrored.agent_counted and old_status != obj.status:
            agent_counters.on_write(agents_before, obj)
        auditlog.record(
            actor,
            f"{kind}.reprojected",
            kind,
            object_id(kind, obj),
            before={k: v[0] for k, v in changes.items()},
            after={k: v[1] for k, v in changes.items()},
            detail={"projection_version": PROJECTION_VERSION},
        )
        return changes


def changes(
    chunk: int = CHUNK, *, outdated_only: bool = False
) -> Iterator[tuple[str, Any, dict[str, list[Any]]]]:
    """Every row whose projection would change, streamed in primary-key chunks.

    ``outdated_only``: just the rows an older table version stamped (a drifted
    row of today's version is the audit's finding to explain, not to overwrite).
    """
    for mirrored in registry.kinds():
        kind = mirrored.name
        base = mirrored.projected_rows(mirrored.model.objects.all())
        if outdated_only:
            base = base.filter(projection_version__lt=PROJECTION_VERSION)
        last = 0
        while True:
            rows = list(base.filter(pk__gt=last).order_by("pk")[:chunk])
            if not rows:
                break
            last = rows[-1].pk
            for obj in rows:
                found = diff(kind, obj)
                if found:
                    yield kind, obj, found


def run(
    *,
    actor: Actor,
    apply: bool,
    progress: Callable[[str], None] | None = None,
    outdated_only: bool = False,
) -> dict[str, Any]:
    """Dry run (``apply=False``) or re-project every drifted / outdated row."""
    counts: Counter[str] = Counter()
    shown: list[dict[str, Any]] = []
    for kind, obj, found in changes(outdated_only=outdated_only):
        counts[kind] += 1
        if len(shown) < SHOWN_CHANGES:
            shown.append(
                {
                    "kind": kind,
                    "id": object_id(kind, obj),
                    "protocol": getattr(obj, "protocol", ""),
                    "raw": getattr(obj, "raw_state", None)
                    or getattr(obj, "raw_status", None)
                    or getattr(obj, "state", ""),
                    "changes": found,
                }
            )
        if apply:
            reproject_row(kind, obj.pk, actor=actor)
        if progress and sum(counts.values()) % 500 == 0:
            progress(f"{sum(counts.values()):,} rows {'re-projected' if apply else 'to change'}")
    return {
        "applied": apply,
        "counts": dict(counts),
        "total": sum(counts.values()),
        "changes": shown,
    }


@background_task()
def run_projection_job(job_id: int) -> str:
    """The worker side of the audit page's buttons."""
    job = ProjectionJob.objects.get(pk=job_id)
    ProjectionJob.objects.filter(pk=job_id).update(state=ProjectionJob.State.RUNNING)

    def note(line: str) -> None:
        ProjectionJob.objects.filter(pk=job_id).update(progress=line[:200])

    try:
        if job.kind == ProjectionJob.Kind.AUDIT:
            report = projection_audit.sweep(progress=note, check_audit_chain=True).to_json()
        else:
            apply = job.kind == ProjectionJob.Kind.REPROJECT
            report = run(actor=Actor(job.requested_by), apply=apply, progress=note)
    except Exception as exc:
        ProjectionJob.objects.filter(pk=job_id).update(
            state=ProjectionJob.State.FAILED,
            progress=f"failed: {exc}"[:200],
            finished_at=timezone.now(),
        )
        raise
    ProjectionJob.objects.filter(pk=job_id).update(
        state=ProjectionJob.State.FINISHED,
        report=report,
        finished_at=timezone.now(),
        progress="done",
    )
    return job.kind


def start_job(kind: str, *, actor: Actor) -> ProjectionJob:
    with transaction.atomic():
        job = ProjectionJob.objects.create(kind=kind, requested_by=actor.name)
        if kind == ProjectionJob.Kind.REPROJECT:
            auditlog.record(actor, "projection.reproject_all", "batch", str(job.pk))
        run_projection_job.enqueue(job.pk)
    return job
