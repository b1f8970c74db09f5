"""Keyset ("next / previous") pagination: constant cost at any depth.

A page is fetched with a row-value comparison on (sort column, id) that the
(sort column DESC, id DESC) indexes answer directly, never with OFFSET, and
never with an unbounded ``COUNT(*)``: the only count is capped
(``CAPPED_COUNT`` rows at most), shown as "1,000+" beyond that, and runs in
the page's own statement (a scalar subquery), not as a second query.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from django.core.exceptions import EmptyResultSet
from django.db import models
from django.db.models import F, IntegerField, QuerySet
from django.db.models.expressions import RawSQL

# Django's own row-value lookups (used for composite primary keys). On
# PostgreSQL they compile to `(a, b) < (x, y)`, which uses a composite index.
from django.db.models.fields.tuple_lookups import Tuple, TupleGreaterThan, TupleLessThan
from django.utils.translation import gettext_lazy as _

PAGE_SIZE = 50
CAPPED_COUNT = 1000


class BadCursor(ValueError):
    """A cursor that was not made by us (or by this version of us)."""


BAD_CURSOR_MESSAGE = _("This page link is not valid any more; showing the first page.")
# Longest cursor we ever make: a 256-character string key, its id, base64.
CURSOR_MAX = 2048
PK_MAX = 2**63 - 1  # bigint
_KINDS = {"t": models.DateTimeField, "d": models.DecimalField, "s": models.CharField}


def encode_cursor(value: Any, pk: int) -> str:
    if isinstance(value, dt.datetime):
        raw = ["t", value.isoformat(), pk]
    elif isinstance(value, Decimal):
        raw = ["d", str(value), pk]
    else:
        raw = ["s", value, pk]
    return base64.urlsafe_b64encode(json.dumps(raw).encode()).decode().rstrip("=")


def decode_cursor(cursor: str, field: models.Field | None = None) -> tuple[Any, int]:
    """(sort value, pk) of a cursor ``encode_cursor`` made; ``BadCursor`` for anything else.

    With ``field`` (the sort column), the value must also be of that column's
    type: a forged cursor never reaches the database as a mismatched or
    out-of-range comparison.
    """
    try:
        value, pk = _decode(cursor, field)
    except (ValueError, TypeError, ArithmeticError, RecursionError) as exc:
        raise BadCursor(str(BAD_CURSOR_MESSAGE)) from exc
    return value, pk


def _decode(cursor: str, field: models.Field | None) -> tuple[Any, int]:
    if not isinstance(cursor, str) or len(cursor) > CURSOR_MAX:
        raise ValueError("cursor too long")
    padded = cursor + "=" * (-len(cursor) % 4)
    raw = json.loads(base64.urlsafe_b64decode(padded.encode("ascii")))
    if not isinstance(raw, list) or len(raw) != 3:
        raise ValueError("not a cursor")
    kind, value, pk = raw
    if type(pk) is not int or not 0 < pk <= PK_MAX or not isinstance(value, str):
        raise ValueError("not a cursor")
    expected = _KINDS.get(kind)
    if expected is None or (field is not None and not isinstance(field, expected)):
        raise ValueError("cursor of another column")
    if kind == "t":
        parsed = dt.datetime.fromisoformat(value)
        if parsed.tzinfo is None:
            raise ValueError("naive timestamp")
        return parsed, pk
    if kind == "d":
        number = Decimal(value)
        if not number.is_finite() or abs(number.adjusted()) > 40:
            raise ValueError("number out of range")
        return number, pk
    if "\x00" in value or (
        field is not None and field.max_length and len(value) > field.max_length
    ):
        raise ValueError("string the column cannot hold")
    return value, pk


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


# The annotation that carries the capped count on every row of a page.
COUNT_COLUMN = "_keyset_matching"


def capped_count(queryset: QuerySet) -> RawSQL | None:
    """``COUNT(*)`` over at most ``CAPPED_COUNT + 1`` rows of ``queryset``, as a scalar
    subquery: PostgreSQL runs it once per statement (an InitPlan), whatever the table size.

    ``None`` when ``queryset`` can match nothing (``.none()``, an empty ``__in``).
    """
    capped = queryset.order_by().values("pk")[: CAPPED_COUNT + 1]
    try:
        sql, params = capped.query.get_compiler(using=queryset.db).as_sql()
    except EmptyResultSet:
        return None
    return RawSQL(f"SELECT COUNT(*) FROM ({sql}) AS capped", params, output_field=IntegerField())


def paginate(
    queryset: QuerySet,
    sort_field: str,
    *,
    after: str | None = None,
    before: str | None = None,
    page_size: int = PAGE_SIZE,
    count: bool = True,
    ascending: bool = False,
) -> KeysetPage:
    """One page of ``queryset`` in (sort_field DESC, id DESC) order (ASC, ASC: ``ascending``).

    ``after``: the page after this cursor (further down the order: older rows,
    or newer ones when ``ascending``); ``before``: the page before it.
    ``sort_field`` must never be NULL. Cursors are the same in both orders.
    """
    key = Tuple(F(sort_field), F("pk"))
    field = queryset.model._meta.get_field(sort_field)
    # "Forward" (after) goes down the order; "backward" (before) comes back up it.
    forward_lookup, backward_lookup = (
        (TupleGreaterThan, TupleLessThan) if ascending else (TupleLessThan, TupleGreaterThan)
    )
    forward_order = (sort_field, "pk") if ascending else (f"-{sort_field}", "-pk")
    backward_order = (f"-{sort_field}", "-pk") if ascending else (sort_field, "pk")
    # The capped count rides along with the page: one statement, one round trip.
    counter = capped_count(queryset) if count else None
    counted = queryset.annotate(**{COUNT_COLUMN: counter}) if counter is not None else queryset
    if before:
        value, pk = decode_cursor(before, field)
        rows = list(
            counted.filter(backward_lookup(key, (value, pk))).order_by(*backward_order)[
                : page_size + 1
            ]
        )
        has_more_newer = len(rows) > page_size
        rows = list(reversed(rows[:page_size]))
        has_prev, has_next = has_more_newer, True
    else:
        if after:
            value, pk = decode_cursor(after, field)
            queryset_page = counted.filter(forward_lookup(key, (value, pk)))
        else:
            queryset_page = counted
        rows = list(queryset_page.order_by(*forward_order)[: page_size + 1])
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
    if counter is not None:
        if rows:
            matching = getattr(rows[0], COUNT_COLUMN)
        elif before or after:
            # An empty page past a cursor says nothing about the rest: count on its own.
            matching = queryset.order_by()[: CAPPED_COUNT + 1].count()
        # else: no cursor and no row: nothing matches.
    return KeysetPage(
        rows=rows,
        next_cursor=next_cursor,
        prev_cursor=prev_cursor,
        matching=min(matching, CAPPED_COUNT),
        capped=matching > CAPPED_COUNT,
    )
