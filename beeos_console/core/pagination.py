"""Keyset ("next / previous") pagination: constant cost at any depth.

A page is fetched with a row-value comparison on (sort column, id) that the
(sort column DESC, id DESC) indexes answer directly, never with OFFSET, and
never with an unbounded ``COUNT(*)``: the only count is capped
(``CAPPED_COUNT`` rows at most) and shown as "1,000+" beyond that.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from django.db.models import F, QuerySet

# Django's own row-value lookups (used for composite primary keys). On
# PostgreSQL they compile to `(a, b) < (x, y)`, which uses a composite index.
from django.db.models.fields.tuple_lookups import Tuple, TupleGreaterThan, TupleLessThan

PAGE_SIZE = 50
CAPPED_COUNT = 1000


class BadCursor(ValueError):
    """A cursor that was not made by us (or by this version of us)."""


def encode_cursor(value: Any, pk: int) -> str:
    if isinstance(value, dt.datetime):
        raw = ["t", value.isoformat(), pk]
    elif isinstance(value, Decimal):
        raw = ["d", str(value), pk]
    else:
        raw = ["s", value, pk]
    return base64.urlsafe_b64encode(json.dumps(raw).encode()).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[Any, int]:
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        kind, value, pk = json.loads(base64.urlsafe_b64decode(padded.encode()))
        if not isinstance(pk, int):
            raise TypeError
        if kind == "t":
            return dt.datetime.fromisoformat(value), pk
        if kind == "d":
            return Decimal(value), pk
        if kind == "s" and isinstance(value, str):
            return value, pk
    except (ValueError, TypeError, json.JSONDecodeError) as exc:
        raise BadCursor("This page link is not valid any more; showing the first page.") from exc
    raise BadCursor("This page link is not valid any more; showing the first page.")


@dataclass
class KeysetPage:
    rows: list[Any]
    next_cursor: str | None
    prev_cursor: str | None
    matching: int
    capped: bool

    @property
    def matching_label(self) -> str:
        return f"{CAPPED_COUNT:,}+" if self.capped else f"{self.matching:,}"


def paginate(
    queryset: QuerySet,
    sort_field: str,
    *,
    after: str | None = None,
    before: str | None = None,
    page_size: int = PAGE_SIZE,
    count: bool = True,
) -> KeysetPage:
    """One page of ``queryset`` in (sort_field DESC, id DESC) order.

    ``after``: the page after this cursor (older rows); ``before``: the page
    before it (newer rows). ``sort_field`` must never be NULL.
    """
    key = Tuple(F(sort_field), F("pk"))
    if before:
        value, pk = decode_cursor(before)
        rows = list(
            queryset.filter(TupleGreaterThan(key, (value, pk))).order_by(sort_field, "pk")[
                : page_size + 1
            ]
        )
        has_more_newer = len(rows) > page_size
        rows = list(reversed(rows[:page_size]))
        has_prev, has_next = has_more_newer, True
    else:
        if after:
            value, pk = decode_cursor(after)
            queryset_page = queryset.filter(TupleLessThan(key, (value, pk)))
        else:
            queryset_page = queryset
        rows = list(queryset_page.order_by(f"-{sort_field}", "-pk")[: page_size + 1])
        has_next = len(rows) > page_size
        rows = rows[:page_size]
        has_prev = bool(after)
    next_cursor = (
        encode_cursor(getattr(rows[-1], sort_field), rows[-1].pk) if rows and has_next else None
    )
    prev_cursor = (
        encode_cursor(getattr(rows[0], sort_field), rows[0].pk) if rows and has_prev else None
    )
    matching = 0
    if count:
        # Bounded: counts at most CAPPED_COUNT + 1 rows, whatever the table size.
        matching = queryset.order_by()[: CAPPED_COUNT + 1].count()
    return KeysetPage(
        rows=rows,
        next_cursor=next_cursor,
        prev_cursor=prev_cursor,
        matching=min(matching, CAPPED_COUNT),
        capped=matching > CAPPED_COUNT,
    )
