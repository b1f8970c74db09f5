"""The search box's reads: a fixed number of queries, each capped, each on an index.

- id fragments: ``ILIKE '%fragment%'`` on the id columns, served by the GIN
  trigram indexes (``task_id_trgm_idx``, ``task_context_trgm_idx``,
  ``message_id_trgm_idx``, ``op_id_trgm_idx``); agent ids by a walk over the
  distinct agents of ``task_agent_created_idx``, or ``task_agent_trgm_idx``
  when there are too many agents to walk (``_agents``);
- words: ``to_tsvector('simple', COALESCE(col, '')) @@ websearch_to_tsquery(…)``
  on message bodies, task errors and operation error messages (``text.py``);
- a pasted URL: the named object by exact id (the existing id indexes).

Every group shows ``CAP`` hits (newest first; contexts and agents by id) and,
on the full page, keyset pages of more (``?more=<group>&after=<cursor>``).
"""

from __future__ import annotations

from django.db import DatabaseError, connection, transaction
from django.utils.translation import gettext, gettext_lazy
from psycopg.errors import QueryCanceled

from beeos_console.core.pagination import BadCursor, decode_cursor, encode_cursor, paginate
from beeos_console.search import query as q
from beeos_console.search import text
from beeos_console.search.hits import (
    CAP,
    MESSAGE_FIELDS,
    OP_FIELDS,
    START,
    STOP,
    TASK_FIELDS,
    Group,
    Links,
    Results,
    agent_hit,
    context_hit,
    exact_first,
    highlight,
    ilike,
    message_hit,
    operation_hit,
    task_hit,
)
from operations.models import RuntimeOperation
from tasks.models import Message, Task

__all__ = ["START", "STOP", "Results", "highlight", "search"]  # highlight: tests

# The full-text queries' time budget, a safety net over ``text.py``'s bounds: a
# query that still runs longer is cut off and the page says the words are too broad.
TEXT_TIMEOUT_MS = 500
TOO_BROAD = gettext_lazy(
    "These words match too many rows to sort by time: add a rarer word or an id."
)
# An id fragment's newest matches (``_newest_page``): the time-index walk's budget,
# then the trigram index's (find them all, sort by time).
FRAGMENT_WALK_MS = 100
FRAGMENT_SORT_MS = 400
TOO_COMMON = gettext_lazy(
    "So many ids hold this fragment that they cannot be sorted by time quickly: "
    "type more of the id."
)
# Distinct agent ids walked in id order (one index probe each) before the trigram
# index takes over; and that index's own time budget.
AGENT_WALK = 2_000
AGENT_TIMEOUT_MS = 150
FRAGMENT_GROUPS = ("tasks", "operations", "messages", "contexts", "agents")
TEXT_GROUPS = tuple(source.key for source in text.SOURCES)
PAGED_GROUPS = FRAGMENT_GROUPS + TEXT_GROUPS


def search(text_: str | None, *, more: str = "", after: str | None = None) -> Results:
    """Every group's first page; with ``more`` (a group key) that group's page ``after``.

    ``BadCursor`` for a cursor we did not make; ``ValueError`` for an unknown group.
    """
    if more and more not in PAGED_GROUPS:
        raise ValueError(more)
    query = q.parse(text_)
    results = Results(query, paged=more)
    if query.empty:
        return results
    links = Links()
    if query.target is not None:
        if not more:
            results.groups = [_by_url(links, query.target)]
        return results
    if query.fragment and not more:
        exact = _exact_kinds(query.fragment)
        if exact:
            # A whole id (typed or pasted): its objects only, no fragment or text search.
            results.groups = [_by_url(links, q.Target(kind, (query.fragment,))) for kind in exact]
            return results
    if query.fragment and more in ("", *FRAGMENT_GROUPS):
        results.groups += _by_fragment(links, query.fragment, only=more, after=after)
    if query.words and more in ("", *TEXT_GROUPS):
        results.groups += _guarded_words(links, query.words, only=more, after=after)
    return results


def _guarded_words(links: Links, words: str, only: str = "", after: str | None = None):
    """The full-text groups within ``TEXT_TIMEOUT_MS`` (one transaction, a local timeout)."""
    try:
        with transaction.atomic(), _local_timeout(TEXT_TIMEOUT_MS):
            return _by_words(links, words, only=only, after=after)
    except BadCursor:
        raise
    except DatabaseError:  # QueryCanceled: the statement timeout
        return [Group("message_text", gettext("Message text"), [], note=str(TOO_BROAD))]


class _local_settings:  # noqa: N801 - used as a context manager
    """PostgreSQL settings (``statement_timeout``, planner switches) for the statements
    inside, within the caller's transaction, then back as they were (one statement each)."""

    def __init__(self, **settings: str) -> None:
        self.settings = settings

    def _set(self, settings: dict[str, str]) -> list[str]:
        names = list(settings)
        sets = ", ".join("set_config(%s, %s, true)" for _ in names)
        gets = ", ".join("current_setting(%s)" for _ in names)
        with connection.cursor() as cursor:
            cursor.execute(
                f"SELECT {gets}, {sets}",
                [*names, *(v for name in names for v in (name, settings[name]))],
            )
            return list(cursor.fetchone()[: len(names)])

    def __enter__(self) -> None:
        self.previous = dict(zip(self.settings, self._set(self.settings), strict=True))

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:  # after an error the savepoint's rollback restores them
            self._set(self.previous)


def _local_timeout(ms: int) -> _local_settings:
    return _local_settings(statement_timeout=f"{ms}ms")


def _timed_out(exc: DatabaseError) -> bool:
    return isinstance(exc.__cause__, QueryCanceled)


def _by_words(links: Links, words: str, only: str = "", after: str | None = None):
    tree = text.indexable_part(words)
    sources = [text.BY_KEY[only]] if only else text.SOURCES
    return [text.text_group(source, links, words, tree, after) for source in sources]


def _by_url(links: Links, target: q.Target) -> Group:
    ids = list(target.ids)
    if target.kind == q.TASK:
        qs = Task.objects.filter(task_id__in=ids).only(*TASK_FIELDS)
        if target.protocol:
            qs = qs.filter(protocol=target.protocol)
        rows, more = _capped(qs.order_by("protocol"))
        return Group("tasks", gettext("Tasks"), [task_hit(links, t) for t in rows], more)
    if target.kind == q.OPERATION:
        rows, more = _capped(RuntimeOperation.objects.filter(operation_id__in=ids).only(*OP_FIELDS))
        return Group(
            "operations", gettext("Operations"), [operation_hit(links, o) for o in rows], more
        )
    if target.kind == q.MESSAGE:
        # source first: the unique (source, message_id) index serves the lookup.
        qs = Message.objects.filter(source__in=Message.Source.values, message_id__in=ids)
        qs = qs.select_related("task")
        rows, more = _capped(qs.only(*MESSAGE_FIELDS).order_by("source"))
        return Group("messages", gettext("Messages"), [message_hit(links, m) for m in rows], more)
    if target.kind == q.CONTEXT:
        found = Task.objects.filter(context_id__in=ids).values_list("context_id", flat=True).first()
        hits = [context_hit(links, found)] if found else []
        return Group("contexts", gettext("Contexts"), hits)
    found = Task.objects.filter(agent_id__in=ids).values_list("agent_id", flat=True).first()
    return Group("agents", gettext("Agents"), [agent_hit(links, found)] if found else [])


def _capped(qs) -> tuple[list, bool]:
    rows = list(qs[: CAP + 1])
    return rows[:CAP], len(rows) > CAP


# One statement, each branch on a b-tree index (task_id_prefix_idx, task_context_idx,
# the operation id's unique index, message_source_id_uniq probed per source,
# task_agent_created_idx).
_EXACT_SQL = f"""
SELECT DISTINCT kind FROM (
    (SELECT '{q.TASK}' AS kind FROM tasks_task WHERE task_id = %(id)s LIMIT 1)
    UNION ALL
    (SELECT '{q.CONTEXT}' FROM tasks_task WHERE context_id = %(id)s LIMIT 1)
    UNION ALL
    (SELECT '{q.OPERATION}' FROM operations_runtimeoperation WHERE operation_id = %(id)s LIMIT 1)
    UNION ALL
    (SELECT '{q.MESSAGE}' FROM tasks_message
     WHERE source = ANY(%(sources)s) AND message_id = %(id)s LIMIT 1)
    UNION ALL
    (SELECT '{q.AGENT}' FROM tasks_task WHERE agent_id = %(id)s LIMIT 1)
) found
"""
_KIND_ORDER = (q.TASK, q.OPERATION, q.MESSAGE, q.CONTEXT, q.AGENT)


def _exact_kinds(text_: str) -> list[str]:
    """The kinds of object whose id is exactly ``text_`` (one query)."""
    if len(text_) > 256:  # no id is longer (models.ID_MAX)
        return []
    with connection.cursor() as cursor:
        cursor.execute(_EXACT_SQL, {"id": text_, "sources": list(Message.Source.values)})
        found = {row[0] for row in cursor.fetchall()}
    return [kind for kind in _KIND_ORDER if kind in found]


def _newest_pages(querysets: list, after: str | None) -> list:
    """``CAP`` rows of each queryset, newest first after ``after``, in the
    ``(created_at DESC, id DESC)`` order of the list indexes — None for one that
    cannot be done quickly.

    The planner walks that index and stops after ``CAP + 1`` rows when it expects
    many matches, and reads the trigram index when it expects few. Ids are made in
    time order, so the matches of a fragment can all sit far back (the bench's
    ``_0007``: 21,000 old messages, a walk of 2.7M rows, 20 s): each walk gets
    ``FRAGMENT_WALK_MS`` (one savepoint for all, the common case); past that, each
    query alone, and then the trigram index finds every match and they are sorted,
    within ``FRAGMENT_SORT_MS``.
    """
    try:
        with transaction.atomic(), _local_timeout(FRAGMENT_WALK_MS):
            return [_newest(qs, after) for qs in querysets]
    except DatabaseError as exc:
        if not _timed_out(exc):
            raise
    return [_newest_page(qs, after) for qs in querysets]


def _newest(qs, after: str | None):
    return paginate(qs, "created_at", after=after, page_size=CAP, count=False)


def _newest_page(qs, after: str | None):
    attempts = (
        _local_settings(statement_timeout=f"{FRAGMENT_WALK_MS}ms"),
        _local_settings(statement_timeout=f"{FRAGMENT_SORT_MS}ms", enable_indexscan="off"),
    )
    for settings in attempts:
        try:
            with transaction.atomic(), settings:
                return _newest(qs, after)
        except DatabaseError as exc:
            if not _timed_out(exc):
                raise
    return None


# The id groups ordered by time: key, label, the rows holding a fragment, their hits.
_ID_GROUPS = (
    (
        "tasks",
        gettext_lazy("Tasks"),
        lambda f: Task.objects.filter(ilike("task_id", f)).only(*TASK_FIELDS),
        task_hit,
    ),
    (
        "operations",
        gettext_lazy("Operations"),
        lambda f: RuntimeOperation.objects.filter(ilike("operation_id", f)).only(*OP_FIELDS),
        operation_hit,
    ),
    (
        "messages",
        gettext_lazy("Messages"),
        lambda f: (
            Message.objects.filter(ilike("message_id", f))
            .select_related("task")
            .only(*MESSAGE_FIELDS)
        ),
        message_hit,
    ),
)


def _by_fragment(links: Links, fragment: str, only: str = "", after: str | None = None):
    first = not after
    wanted = [group for group in _ID_GROUPS if only in ("", group[0])]
    pages = _newest_pages([rows(fragment) for _, _, rows, _ in wanted], after)
    groups = []
    for (key, label, _, make_hit), page in zip(wanted, pages, strict=True):
        hits = [make_hit(links, row) for row in page.rows] if page else []
        groups.append(_page_group(key, str(label), hits, page, fragment, first))
    if only in ("", "contexts"):
        groups.append(_contexts(links, fragment, after))
    if only in ("", "agents"):
        groups.append(_agents(links, fragment, after))
    return groups


def _page_group(key, label, hits, page, fragment: str, first: bool) -> Group:
    if page is None:
        return Group(key, label, [], note=str(TOO_COMMON))
    return Group(
        key,
        label,
        exact_first(hits, fragment) if first else hits,
        more=bool(page.next_cursor),
        next_cursor=page.next_cursor or "",
    )


def _value_after(after: str | None, column: str) -> str:
    """The id a contexts / agents page starts after ('' from the start)."""
    if not after:
        return ""
    value, _ = decode_cursor(after, Task._meta.get_field(column))
    return value


def _value_group(key, label, links, make_hit, values: list[str], fragment, after) -> Group:
    shown = values[:CAP]
    hits = [make_hit(links, value) for value in shown]
    more = len(values) > CAP
    return Group(
        key,
        label,
        exact_first(hits, fragment) if not after else hits,
        more=more,
        next_cursor=encode_cursor(shown[-1], 1) if more else "",
    )


def _contexts(links: Links, fragment: str, after: str | None) -> Group:
    start = _value_after(after, "context_id")
    values = list(
        Task.objects.filter(ilike("context_id", fragment), context_id__gt=start)
        .values_list("context_id", flat=True)
        .distinct()
        .order_by("context_id")[: CAP + 1]
    )
    return _value_group(
        "contexts", gettext("Contexts"), links, context_hit, values, fragment, after
    )


# Distinct agent ids in id order after %(after)s, one probe of task_agent_created_idx
# each (a "skip scan"), at most %(walk)s of them. Kept: those holding the fragment,
# and one last row: agent_id NULL when the walk reached the last agent, else the
# last agent walked (n = walk). Stops as soon as CAP + 1 agents matched.
_AGENT_WALK_SQL = """
WITH RECURSIVE walk(agent_id, n) AS (
    (SELECT agent_id, 1 FROM tasks_task WHERE agent_id > %(after)s ORDER BY agent_id LIMIT 1)
    UNION ALL
    SELECT (SELECT t.agent_id FROM tasks_task t WHERE t.agent_id > w.agent_id
            ORDER BY t.agent_id LIMIT 1), w.n + 1
    FROM walk w WHERE w.agent_id IS NOT NULL AND w.n < %(walk)s
)
SELECT agent_id, n, agent_id ILIKE %(pattern)s FROM walk
WHERE agent_id IS NULL OR n = %(walk)s OR agent_id ILIKE %(pattern)s
LIMIT %(limit)s
"""


def _agents(links: Links, fragment: str, after: str | None) -> Group:
    """Agents whose id holds ``fragment``, by id: walked, or found by trigrams.

    A console mirrors many tasks per agent: walking the distinct agent ids (one
    index probe each) costs the number of agents, whatever the fragment. With
    more than ``AGENT_WALK`` agents the trigram index answers instead, within
    ``AGENT_TIMEOUT_MS`` (a fragment in the id of agents with very many tasks
    reads all their rows); past that the walk's matches are shown, with a
    cursor to walk on from where it stopped.
    """
    start = _value_after(after, "agent_id")
    with connection.cursor() as cursor:
        cursor.execute(
            _AGENT_WALK_SQL,
            {
                "after": start,
                "walk": AGENT_WALK,
                "pattern": q.like_pattern(fragment),
                "limit": CAP + 2,
            },
        )
        rows = cursor.fetchall()
    found = [agent for agent, _, hit in rows if hit]
    # The walk read every agent (it ended), or CAP + 1 matches are enough for a page.
    walked_all = not rows or any(agent is None for agent, _, _ in rows)
    label = gettext("Agents")
    if len(found) > CAP or walked_all:
        return _value_group("agents", label, links, agent_hit, found, fragment, after)
    try:
        with transaction.atomic(), _local_timeout(AGENT_TIMEOUT_MS):
            values = list(
                Task.objects.filter(ilike("agent_id", fragment), agent_id__gt=start)
                .values_list("agent_id", flat=True)
                .distinct()
                .order_by("agent_id")[: CAP + 1]
            )
        return _value_group("agents", label, links, agent_hit, values, fragment, after)
    except DatabaseError as exc:
        if not _timed_out(exc):
            raise
        # Too many rows hold the fragment: the walk's matches, and where it stopped.
        last = rows[-1][0]  # the walk's last agent (n = AGENT_WALK): not ended, few matches
        group = _value_group("agents", label, links, agent_hit, found, fragment, after)
        group.more = group.incomplete = True
        group.next_cursor = encode_cursor(last, 1)
        group.note = gettext(
            "Only the agent ids up to %(id)s were checked (too many agents to check at once)."
        ) % {"id": last}
        return group
