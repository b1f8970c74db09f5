"""Reads of cancel requests and bulk cancels that pages need: each one a fixed number of queries.

Generic over the mirrored kinds: a page names its object by kind + ids.
"""

from __future__ import annotations

from beeos_console.cancels.models import BulkCancel, CancelRequest
from beeos_console.core.pagination import KeysetPage, paginate

BULK_ITEM_ROWS = 1000


def last_cancel_request(
    object_kind: str, object_id: str, *, protocol: str | None = None
) -> CancelRequest | None:
    """The newest cancel request for one object, if any (the detail pages show it).

    ``protocol`` narrows it where two protocols may share an id (tasks); None
    leaves the protocol out of the filter (operations).
    """
    qs = CancelRequest.objects.filter(object_kind=object_kind, object_id=object_id)
    if protocol is not None:
        qs = qs.filter(protocol=protocol)
    return qs.order_by("-created_at").first()


def open_uncertain_cancels(limit: int) -> list[CancelRequest]:
    """Uncertain cancels no re-read has resolved yet, newest first (partial index, LIMIT)."""
    return list(
        CancelRequest.objects.filter(CancelRequest.OPEN_UNCERTAIN)
        .order_by("-created_at")
        .only(
            "object_kind",
            "protocol",
            "object_id",
            "requested_by",
            "created_at",
            "finished_at",
            "checks",
            "next_check_at",
            "gave_up_at",
        )[:limit]
    )


def bulk_items(bulk: BulkCancel, *, limit: int = BULK_ITEM_ROWS) -> list[CancelRequest]:
    """The per-item report of one bulk cancel, in the order it ran."""
    return list(
        CancelRequest.objects.filter(bulk=bulk)
        .order_by("id")
        .only("object_id", "protocol", "result", "message", "state", "finished_at")[:limit]
    )


BULK_JOB_PAGE = 50


def bulk_jobs(*, after: str | None = None) -> KeysetPage:
    """Every bulk cancel job, newest first, one keyset page at a time."""
    jobs = BulkCancel.objects.only(
        "object_kind",
        "requested_by",
        "reason",
        "state",
        "total",
        "done",
        "counts",
        "created_at",
        "finished_at",
    )
    return paginate(jobs, "created_at", after=after, page_size=BULK_JOB_PAGE)
