"""Bulk cancel: preview what a selection would do, then run it on the task framework.

The preview splits a selection into what will be cancelled and what will be
skipped (and why). Starting a batch needs the typed confirmation that matches
the *current* count ("cancel 240 tasks"); the batch then runs on a
django-tasks worker (database backend), one audited cancel per item through
the same engine as a single cancel, with progress stored on the batch.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from django.db import transaction
from django.db.models import F, QuerySet
from django.utils import timezone
from django_tasks import task as background_task

from beeos_console.auditlog import services as auditlog
from beeos_console.auditlog.services import Actor
from beeos_console.cancels.engine import request_cancel
from beeos_console.cancels.models import BulkCancel
from beeos_console.mirror import registry
from beeos_console.mirror.i18n import translated

BULK_MAX = 5000  # items per batch: larger selections are refused, narrow the filter
EXAMPLES = 5


@dataclass
class BulkPreview:
    kind: str
    items: list[tuple[str, str]] = field(default_factory=list)  # (protocol, id) to cancel
    skipped: Counter[str] = field(default_factory=Counter)  # reason -> count
    examples: dict[str, list[str]] = field(default_factory=dict)
    too_many: bool = False

    @property
    def count(self) -> int:
        return len(self.items)

    @property
    def skipped_total(self) -> int:
        return sum(self.skipped.values())

    @property
    def skipped_rows(self) -> list[tuple[str, int, list[str]]]:
        """(why, how many, examples), most common first (templates cannot index a Counter).

        ``why`` is a refusal's summary, kept in English (the batch and its audit entry
        store it) and said here in the reader's language.
        """
        return [
            (translated(why), n, self.examples.get(why, []))
            for why, n in self.skipped.most_common()
        ]

    @property
    def noun(self) -> str:
        return f"{self.kind}s" if self.count != 1 else self.kind

    @property
    def counted(self) -> str:
        """The cancellable items in words, in the reader's language ("240 tasks")."""
        return registry.get(self.kind).count_words(self.count)

    @property
    def confirmation(self) -> str:
        """What the operator must type to start it.

        Deliberately English in every language: a fixed phrase compared letter for
        letter (typing it must not need an input method), like a command.
        """
        return f"cancel {self.count} {self.noun}"


def preview(kind: str, queryset: QuerySet) -> BulkPreview:
    """Split a selection (at most BULK_MAX rows are looked at) into cancel / skip.

    Each row is judged by its kind's one cancel rule, the same a single cancel asks.
    """
    mirrored = registry.cancellable_kinds()[kind]
    target_class = mirrored.cancel_target
    result = BulkPreview(kind)
    rows = list(
        queryset.order_by("-created_at", "-id").only(*mirrored.cancel_fields)[: BULK_MAX + 1]
    )
    if len(rows) > BULK_MAX:
        result.too_many = True
        rows = rows[:BULK_MAX]
    for row in rows:
        target = target_class.for_object(row)
        refusal = target.refusal(row) or target.already_requested(row)
        if refusal is None:
            result.items.append((target.protocol, target.object_id))
            continue
        why = refusal.summary
        result.skipped[why] += 1
        result.examples.setdefault(why, [])
        if len(result.examples[why]) < EXAMPLES:
            result.examples[why].append(target.object_id)
    return result


def start(selection: BulkPreview, *, actor: Actor, reason: str, query: str) -> BulkCancel:
    """Record the batch, audit it once, and hand it to the worker."""
    with transaction.atomic():
        bulk = BulkCancel.objects.create(
            object_kind=selection.kind,
            requested_by=actor.name,
            reason=reason,
            query=query,
            total=selection.count,
            items=[list(item) for item in selection.items],
            counts={"skipped": dict(selection.skipped)},
        )
        auditlog.record(
            actor,
            f"{selection.kind}.bulk_cancel",
            "batch",
            str(bulk.pk),
            reason=reason,
            detail={
                "items": selection.count,
                "skipped": dict(selection.skipped),
                "query": query,
            },
        )
        result = run_bulk_cancel.enqueue(bulk.pk)
        bulk.task_result_id = str(result.id)
        bulk.save(update_fields=["task_result_id"])
    return bulk


@background_task()
def run_bulk_cancel(bulk_id: int) -> dict[str, int]:
    """The worker side: one safe cancel per item, progress saved as it goes."""

    bulk = BulkCancel.objects.get(pk=bulk_id)
    if bulk.state == BulkCancel.State.FINISHED:
        return bulk.counts.get("results", {})
    BulkCancel.objects.filter(pk=bulk_id).update(
        state=BulkCancel.State.RUNNING, started_at=timezone.now()
    )
    actor = Actor(bulk.requested_by)
    target_class = registry.cancellable_kinds()[bulk.object_kind].cancel_target
    results: Counter[str] = Counter()
    for index, (protocol, object_id) in enumerate(bulk.items):
        key = f"bulk-{bulk.pk}-{index}"  # a restarted batch never cancels an item twice
        try:
            outcome = request_cancel(
                target_class(protocol, object_id),
                actor=actor,
                reason=bulk.reason,
                idempotency_key=key,
                bulk=bulk,
            )
            results[outcome.result] += 1
        except LookupError:
            results["not_found"] += 1
        BulkCancel.objects.filter(pk=bulk_id).update(done=F("done") + 1)
    counts = dict(bulk.counts)
    counts["results"] = dict(results)
    BulkCancel.objects.filter(pk=bulk_id).update(
        state=BulkCancel.State.FINISHED, finished_at=timezone.now(), counts=counts
    )
    return dict(results)
