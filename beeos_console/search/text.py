"""Full text over message bodies, task errors and operation errors, newest first, bounded.

One group (``CAP`` hits a page) is answered in one of two ways, chosen per query:

1. **Few candidates.** The words' indexable part (PostgreSQL's ``querytree``:
   negations dropped, words and phrases kept) is estimated by the planner
   (``EXPLAIN``, nothing executed). When at most ``GIN_CANDIDATES`` rows may
   hold it, the GIN index finds them all, the whole query (phrase order,
   ``-word``) rechecks them and they are sorted newest first: complete.
2. **Many candidates** (common words, or nothing indexable such as ``-word``
   alone). The newest rows are read through the ``(created_at DESC, id DESC)``
   index, at most ``WINDOW`` rows per page, and the whole query is checked on
   each: common words fill a page after a few dozen rows. When the window
   holds fewer matches, the group says how far back it looked and offers to
   look further back (a keyset cursor on the last row read) — it never says
   "no match" about rows it did not read.

Before this, a phrase or negation over very common words that matched nothing
made the planner walk the whole time index (3M messages: 8.6 s, cut at 500 ms
and answered "too broad"); see bench/README.md.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.contrib.postgres.search import SearchHeadline, SearchQuery
from django.db import connection
from django.db.models import Model, QuerySet
from django.db.models.expressions import RawSQL
from django.utils import formats
from django.utils.functional import Promise
from django.utils.translation import gettext, gettext_lazy, ngettext

from beeos_console.core.pagination import decode_cursor, encode_cursor
from beeos_console.mirror.search import SEARCH_CONFIG, search_query, search_vector
from beeos_console.search.hits import (
    CAP,
    HEADLINE_OPTIONS,
    MESSAGE_FIELDS,
    OP_FIELDS,
    TASK_FIELDS,
    Group,
    Hit,
    Links,
    highlight,
    message_hit,
    operation_hit,
    task_hit,
)
from operations.models import RuntimeOperation
from tasks.models import Message, Task

# At most this many candidate rows (planner's estimate) go the GIN way: found,
# rechecked and sorted in full (~2–3 µs a row, bench/README.md).
GIN_CANDIDATES = 10_000
# At most this many of the newest rows are read per page the walking way.
WINDOW = 10_000
NOT_INDEXABLE = ("", "T")


@dataclass(frozen=True)
class TextSource:
    """A text column the box searches, and how its rows become hits."""

    key: str
    label: Promise
    model: type[Model]
    column: str
    fields: tuple[str, ...]
    related: tuple[str, ...]
    hit: Callable[..., Hit]
    rows_word: Callable[[int], str]

    def queryset(self) -> QuerySet:
        qs = self.model.objects.only(*self.fields)
        return qs.select_related(*self.related) if self.related else qs

    def matching(self, tsquery: SearchQuery, qs: QuerySet | None = None) -> QuerySet:
        qs = self.model.objects.all() if qs is None else qs
        return qs.alias(_v=search_vector(self.column)).filter(_v=tsquery)


SOURCES = (
    TextSource(
        "message_text",
        gettext_lazy("Message text"),
        Message,
        "body",
        MESSAGE_FIELDS,
        ("task",),
        message_hit,
        lambda n: ngettext("%(count)s message", "%(count)s messages", n),
    ),
    TextSource(
        "task_errors",
        gettext_lazy("Task errors"),
        Task,
        "error",
        TASK_FIELDS,
        (),
        task_hit,
        lambda n: ngettext("%(count)s task", "%(count)s tasks", n),
    ),
    TextSource(
        "operation_errors",
        gettext_lazy("Operation errors"),
        RuntimeOperation,
        "error_message",
        OP_FIELDS,
        (),
        operation_hit,
        lambda n: ngettext("%(count)s operation", "%(count)s operations", n),
    ),
)
BY_KEY = {source.key: source for source in SOURCES}


def indexable_part(words: str) -> str:
    """The part of the words a GIN index can serve (``querytree``), as tsquery text."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT querytree(websearch_to_tsquery(%s::regconfig, %s))", [SEARCH_CONFIG, words]
        )
        return cursor.fetchone()[0] or ""


def estimated_rows(source: TextSource, tree: str) -> float:
    """The planner's estimate of the rows holding ``tree`` (EXPLAIN: nothing is read)."""
    tsquery = SearchQuery(tree, config=SEARCH_CONFIG, search_type="raw")
    raw = source.matching(tsquery, source.model.objects.only("pk"))
    plan = json.loads(raw.explain(format="json"))
    return float(plan[0]["Plan"]["Plan Rows"])


def _headline(column: str, words: str) -> SearchHeadline:
    return SearchHeadline(column, search_query(words), config=SEARCH_CONFIG, **HEADLINE_OPTIONS)


def _hits(source: TextSource, links: Links, rows: list[Any]) -> list[Hit]:
    return [source.hit(links, row, highlight(row._headline)) for row in rows]


def text_group(
    source: TextSource, links: Links, words: str, tree: str, after: str | None = None
) -> Group:
    """One page of ``source``'s rows matching ``words``, newest first (module docstring)."""
    if tree not in NOT_INDEXABLE and estimated_rows(source, tree) <= GIN_CANDIDATES:
        return _all_candidates(source, links, words, after)
    return _walk(source, links, words, after)


def _sql(source: TextSource) -> tuple[str, str, str]:
    """The table, the column and its ``search_vector`` expression, quoted for SQL."""
    table = connection.ops.quote_name(source.model._meta.db_table)
    column = connection.ops.quote_name(source.column)
    # The config inline, as the GIN expression indexes have it (a parameter would not match).
    return table, column, f"to_tsvector('{SEARCH_CONFIG}'::regconfig, COALESCE({column}, ''))"


def _keyset(source: TextSource, after: str | None) -> tuple[str, list[Any]]:
    """``AND (created_at, id) < cursor`` for a page after ``after`` (``BadCursor``)."""
    if not after:
        return "", []
    value, pk = decode_cursor(after, source.model._meta.get_field("created_at"))
    return "AND (created_at, id) < (%s, %s)", [value, pk]


def _fetch(source: TextSource, ids_sql: str, params: list[Any], words: str) -> list[Any]:
    """The rows whose ids ``ids_sql`` selects (one statement with it), with their
    highlighted text, newest first."""
    qs = source.queryset().filter(pk__in=RawSQL(ids_sql, params))
    rows = qs.annotate(_headline=_headline(source.column, words))
    return sorted(rows, key=lambda row: (row.created_at, row.pk), reverse=True)


def _page(source: TextSource, links: Links, rows: list[Any]) -> Group:
    """``CAP`` hits of at most ``CAP + 1`` rows; the cursor after the last one shown."""
    group = Group(source.key, str(source.label), _hits(source, links, rows[:CAP]))
    if len(rows) > CAP:
        last = rows[CAP - 1]
        group.more, group.next_cursor = True, encode_cursor(last.created_at, last.pk)
    return group


def _all_candidates(source: TextSource, links: Links, words: str, after: str | None) -> Group:
    table, _, vector = _sql(source)
    keyset, params = _keyset(source, after)
    # MATERIALIZED: the (few) candidates come from the GIN index, whatever the
    # planner thinks of walking the time index for the whole query.
    ids_sql = (
        f"WITH found AS MATERIALIZED (SELECT id, created_at FROM {table}"  # noqa: S608
        f" WHERE {vector} @@ websearch_to_tsquery('{SEARCH_CONFIG}'::regconfig, %s)"
        f" {keyset}) SELECT id FROM found ORDER BY created_at DESC, id DESC LIMIT %s"
    )
    rows = _fetch(source, ids_sql, [words, *params, CAP + 1], words)
    return _page(source, links, rows)


def _walk(source: TextSource, links: Links, words: str, after: str | None) -> Group:
    table, column, vector = _sql(source)
    keyset, params = _keyset(source, after)
    where = f"WHERE {keyset[4:]}" if keyset else ""
    # The inner LIMIT bounds the rows read; the outer one stops at CAP + 1 matches.
    # No outer ORDER BY: rows come out in the index's order, and the walk can stop.
    ids_sql = (
        f"SELECT id FROM (SELECT id, {column} FROM {table} {where}"  # noqa: S608
        " ORDER BY created_at DESC, id DESC LIMIT %s) w"
        f" WHERE {vector} @@ websearch_to_tsquery('{SEARCH_CONFIG}'::regconfig, %s)"
        " LIMIT %s"
    )
    rows = _fetch(source, ids_sql, [*params, WINDOW, words, CAP + 1], words)
    group = _page(source, links, rows)
    if len(rows) > CAP:
        return group
    with connection.cursor() as cursor:
        # Where the window ended (None: at the oldest row, so the walk was complete).
        cursor.execute(
            f"SELECT created_at, id FROM {table} {where}"  # noqa: S608
            " ORDER BY created_at DESC, id DESC OFFSET %s LIMIT 1",
            [*params, WINDOW - 1],
        )
        edge = cursor.fetchone()
    if edge is not None:
        # The window ended before the table did: say so, and offer to look further back.
        group.incomplete = group.more = True
        group.next_cursor = encode_cursor(edge[0], edge[1])
        group.note = _window_note(source, edge[0], bool(rows), bool(after))
    return group


def _window_note(source: TextSource, until: Any, found: bool, later_page: bool) -> str:
    values = {
        "rows": source.rows_word(WINDOW)
        % {"count": formats.number_format(WINDOW, force_grouping=True)},
        "when": until.strftime("%Y-%m-%d %H:%M UTC"),
    }
    if found and later_page:
        words = gettext(
            "These are all the matches among the next %(rows)s (back to %(when)s); "
            "older ones were not searched yet."
        )
    elif found:
        words = gettext(
            "These are all the matches among the newest %(rows)s (back to %(when)s); "
            "older ones were not searched yet."
        )
    elif later_page:
        words = gettext(
            "No match among the next %(rows)s (back to %(when)s); older ones were not searched yet."
        )
    else:
        words = gettext(
            "No match among the newest %(rows)s (back to %(when)s); "
            "older ones were not searched yet."
        )
    return words % values
