"""The search box's reads: a fixed number of queries, each capped, each on an index.

- id fragments: ``ILIKE '%fragment%'`` on the id columns, served by the GIN
  trigram indexes (``task_id_trgm_idx``, ``task_context_trgm_idx``,
  ``message_id_trgm_idx``, ``op_id_trgm_idx``);
- words: ``to_tsvector('simple', COALESCE(col, '')) @@ websearch_to_tsquery(…)``
  on message bodies, task errors and operation error messages, served by the
  GIN expression indexes built on the same ``search_vector(col)``;
- a pasted URL: the named object by exact id (the existing id indexes).

Every group shows the newest ``CAP`` hits and says when there are more.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from django.contrib.postgres.search import SearchHeadline
from django.db import DatabaseError, connection, transaction
from django.db.models import F, Lookup, QuerySet, Value
from django.urls import reverse
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from beeos_console.core.links import ObjectUrl, query_string
from beeos_console.mirror.search import SEARCH_CONFIG, search_query, search_vector
from beeos_console.search import query as q
from operations.models import RuntimeOperation
from tasks.models import Message, Task

CAP = 20
# The full-text queries' time budget. Newest-first over a GIN match: the planner
# walks the (created_at DESC, id DESC) index when it expects many matches and
# reads the GIN index when it expects few; a query it misjudges (a negation or a
# phrase over very common words that in the end matches nothing) could scan
# millions of rows. It is cut off and the page says the words are too broad.
TEXT_TIMEOUT_MS = 500
TOO_BROAD = "These words match too many rows to sort by time: add a rarer word or an id."
# ts_headline's start/stop markers: private-use characters, never markup. The
# text is escaped first, then only these become <mark> and </mark>.
START, STOP = "\ue000", "\ue001"
_MARKED = re.compile(f"{START}(.*?){STOP}", re.DOTALL)
HEADLINE_OPTIONS = {
    "start_sel": START,
    "stop_sel": STOP,
    "max_words": 30,
    "min_words": 12,
    "max_fragments": 2,
    "fragment_delimiter": " … ",
}


class ILike(Lookup):
    """``lhs ILIKE rhs`` on the column itself: the trigram GIN index serves it.

    (Django's ``icontains`` compares ``UPPER(col::text)``, which no index on the column serves.)
    """

    lookup_name = "search_ilike"
    prepare_rhs = False

    def as_sql(self, compiler, connection):
        lhs, lhs_params = self.process_lhs(compiler, connection)
        rhs, rhs_params = self.process_rhs(compiler, connection)
        return f"{lhs} ILIKE {rhs}", (*lhs_params, *rhs_params)


def ilike(column: str, fragment: str) -> ILike:
    return ILike(F(column), Value(q.like_pattern(fragment)))


def highlight(text: str) -> SafeString:
    """ts_headline output as HTML: everything escaped, the matched words in <mark>."""
    escaped = str(escape(text))
    marked = _MARKED.sub(r"<mark>\1</mark>", escaped)
    return mark_safe(marked.replace(START, "").replace(STOP, ""))  # noqa: S308 - escaped above


@dataclass
class Hit:
    kind: str
    id: str
    url: str
    detail: str = ""
    when: object = None  # a datetime
    headline: SafeString | None = None
    exact: bool = False

    def as_json(self) -> dict:
        return {
            "kind": self.kind,
            "id": self.id,
            "url": self.url,
            "detail": self.detail,
            "created_at": self.when.isoformat() if self.when else None,
            "headline": str(self.headline) if self.headline is not None else None,
        }


@dataclass
class Group:
    key: str
    label: str
    hits: list[Hit]
    more: bool = False  # capped: more hits than shown
    note: str = ""

    def as_json(self) -> dict:
        return {
            "kind": self.key,
            "label": self.label,
            "more": self.more,
            "note": self.note,
            "hits": [hit.as_json() for hit in self.hits],
        }


@dataclass
class Results:
    query: q.Query
    groups: list[Group] = field(default_factory=list)

    @property
    def hits(self) -> list[Hit]:
        return [hit for group in self.groups for hit in group.hits]

    @property
    def noted(self) -> bool:
        return any(group.note for group in self.groups)

    @property
    def single(self) -> Hit | None:
        """The one object an id or a URL found (text matches are shown, never jumped to)."""
        hits = self.hits
        capped = any(group.more for group in self.groups)
        if len(hits) == 1 and not capped and hits[0].headline is None:
            return hits[0]
        return None

    def as_json(self) -> dict:
        single = self.single
        return {
            "query": self.query.text,
            "redirect": single.url if single else None,
            "groups": [group.as_json() for group in self.groups if group.hits or group.note],
        }


class _Links:
    """One ``reverse`` per URL name per search."""

    def __init__(self) -> None:
        self.task = ObjectUrl("tasks:detail")
        self.operation = ObjectUrl("operations:detail")
        self.tasks = reverse("tasks:list")
        self.messages = reverse("tasks:messages")

    def message(self, message: Message) -> str:
        if message.task_id is not None:
            task = message.task
            return f"{self.task(task.task_id, protocol=task.protocol)}#m-{message.pk}"
        if message.conversation_id:
            return self.messages + query_string({"conversation": message.conversation_id})
        return self.messages


def _capped(qs: QuerySet) -> tuple[list, bool]:
    rows = list(qs[: CAP + 1])
    return rows[:CAP], len(rows) > CAP


def _newest(qs: QuerySet) -> QuerySet:
    """Newest first, in the order of the ``(created_at DESC, id DESC)`` list indexes.

    So the planner may walk that index and stop after ``CAP + 1`` rows when a
    fragment or a word is common (a GIN bitmap of a million rows and a sort
    would take seconds), and use the GIN index when it is rare.
    """
    return qs.order_by("-created_at", "-id")


def _exact_first(hits: list[Hit], text: str) -> list[Hit]:
    for hit in hits:
        hit.exact = hit.id == text
    return sorted(hits, key=lambda hit: not hit.exact)  # stable: newest first otherwise


TASK_FIELDS = ("task_id", "protocol", "status", "raw_state", "agent_id", "created_at")
OP_FIELDS = ("operation_id", "instance_id", "method", "status", "raw_status", "created_at")
MESSAGE_FIELDS = (
    "message_id",
    "source",
    "type",
    "state",
    "conversation_id",
    "created_at",
    "task__task_id",
    "task__protocol",
)


def _task_hit(links: _Links, task: Task, headline: SafeString | None = None) -> Hit:
    return Hit(
        "task",
        task.task_id,
        links.task(task.task_id, protocol=task.protocol),
        f"{task.get_protocol_display()} · {task.status} ({task.raw_state})"
        + (f" · agent {task.agent_id}" if task.agent_id else ""),
        task.created_at,
        headline,
    )


def _operation_hit(links: _Links, op: RuntimeOperation, headline=None) -> Hit:
    return Hit(
        "operation",
        op.operation_id,
        links.operation(op.operation_id),
        f"{op.method} · {op.status} ({op.raw_status}) · instance {op.instance_id}",
        op.created_at,
        headline,
    )


def _message_hit(links: _Links, message: Message, headline=None) -> Hit:
    where = f"task {message.task.task_id}" if message.task_id else "no mirrored task"
    return Hit(
        "message",
        message.message_id,
        links.message(message),
        f"{message.type or message.get_source_display()} · {message.state or '—'} · {where}",
        message.created_at,
        headline,
    )


def _context_hit(links: _Links, context_id: str) -> Hit:
    return Hit("context", context_id, links.tasks + query_string({"q": context_id}), "tasks")


def _agent_hit(links: _Links, agent_id: str) -> Hit:
    return Hit("agent", agent_id, links.tasks + query_string({"agent_id": agent_id}), "tasks")


def search(text: str | None) -> Results:
    query = q.parse(text)
    results = Results(query)
    if query.empty:
        return results
    links = _Links()
    if query.target is not None:
        results.groups = [_by_url(links, query.target)]
        return results
    if query.fragment:
        exact = _exact_kinds(query.fragment)
        if exact:
            # A whole id (typed or pasted): its objects only, no fragment or text search.
            results.groups = [_by_url(links, q.Target(kind, (query.fragment,))) for kind in exact]
            return results
        results.groups += _by_fragment(links, query.fragment)
    if query.words:
        results.groups += _guarded_words(links, query.words)
    return results


def _guarded_words(links: _Links, words: str) -> list[Group]:
    """The full-text groups within ``TEXT_TIMEOUT_MS`` (one transaction, a local timeout)."""
    try:
        with transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute(
                    "SELECT set_config('statement_timeout', %s, true)", [f"{TEXT_TIMEOUT_MS}ms"]
                )
            return _by_words(links, words)
    except DatabaseError:  # QueryCanceled: the statement timeout
        return [Group("message_text", "Message text", [], note=TOO_BROAD)]


def _by_url(links: _Links, target: q.Target) -> Group:
    ids = list(target.ids)
    if target.kind == q.TASK:
        qs = Task.objects.filter(task_id__in=ids).only(*TASK_FIELDS)
        if target.protocol:
            qs = qs.filter(protocol=target.protocol)
        rows, more = _capped(qs.order_by("protocol"))
        return Group("tasks", "Tasks", [_task_hit(links, t) for t in rows], more)
    if target.kind == q.OPERATION:
        rows, more = _capped(RuntimeOperation.objects.filter(operation_id__in=ids).only(*OP_FIELDS))
        return Group("operations", "Operations", [_operation_hit(links, o) for o in rows], more)
    if target.kind == q.MESSAGE:
        # source first: the unique (source, message_id) index serves the lookup.
        qs = Message.objects.filter(source__in=Message.Source.values, message_id__in=ids)
        qs = qs.select_related("task")
        rows, more = _capped(qs.only(*MESSAGE_FIELDS).order_by("source"))
        return Group("messages", "Messages", [_message_hit(links, m) for m in rows], more)
    if target.kind == q.CONTEXT:
        found = Task.objects.filter(context_id__in=ids).values_list("context_id", flat=True).first()
        hits = [_context_hit(links, found)] if found else []
        return Group("contexts", "Contexts", hits)
    found = Task.objects.filter(agent_id__in=ids).values_list("agent_id", flat=True).first()
    return Group("agents", "Agents", [_agent_hit(links, found)] if found else [])


# One statement, each branch on a b-tree index (task_id_prefix_idx, task_context_idx,
# the operation id's unique index, message_source_id_uniq probed per source).
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
) found
"""
_KIND_ORDER = (q.TASK, q.OPERATION, q.MESSAGE, q.CONTEXT)


def _exact_kinds(text: str) -> list[str]:
    """The kinds of object whose id is exactly ``text`` (one query)."""
    if len(text) > 256:  # no id is longer (models.ID_MAX)
        return []
    with connection.cursor() as cursor:
        cursor.execute(_EXACT_SQL, {"id": text, "sources": list(Message.Source.values)})
        found = {row[0] for row in cursor.fetchall()}
    return [kind for kind in _KIND_ORDER if kind in found]


def _by_fragment(links: _Links, fragment: str) -> list[Group]:
    tasks, more_tasks = _capped(
        _newest(Task.objects.filter(ilike("task_id", fragment))).only(*TASK_FIELDS)
    )
    contexts = list(
        Task.objects.filter(ilike("context_id", fragment))
        .values_list("context_id", flat=True)
        .distinct()
        .order_by("context_id")[: CAP + 1]
    )
    operations, more_ops = _capped(
        _newest(RuntimeOperation.objects.filter(ilike("operation_id", fragment))).only(*OP_FIELDS)
    )
    messages, more_messages = _capped(
        _newest(Message.objects.filter(ilike("message_id", fragment)))
        .select_related("task")
        .only(*MESSAGE_FIELDS)
    )
    return [
        Group(
            "tasks",
            "Tasks",
            _exact_first([_task_hit(links, t) for t in tasks], fragment),
            more_tasks,
        ),
        Group(
            "operations",
            "Operations",
            _exact_first([_operation_hit(links, o) for o in operations], fragment),
            more_ops,
        ),
        Group(
            "messages",
            "Messages",
            _exact_first([_message_hit(links, m) for m in messages], fragment),
            more_messages,
        ),
        Group(
            "contexts",
            "Contexts",
            _exact_first([_context_hit(links, c) for c in contexts[:CAP]], fragment),
            len(contexts) > CAP,
        ),
    ]


def _headline(column: str, words: str) -> SearchHeadline:
    return SearchHeadline(column, search_query(words), config=SEARCH_CONFIG, **HEADLINE_OPTIONS)


def _by_words(links: _Links, words: str) -> list[Group]:
    tsquery = search_query(words)
    messages, more_messages = _capped(
        _newest(
            Message.objects.alias(_v=search_vector("body"))
            .filter(_v=tsquery)
            .annotate(_headline=_headline("body", words))
        )
        .select_related("task")
        .only(*MESSAGE_FIELDS)
    )
    tasks, more_tasks = _capped(
        _newest(
            Task.objects.alias(_v=search_vector("error"))
            .filter(_v=tsquery)
            .annotate(_headline=_headline("error", words))
        ).only(*TASK_FIELDS)
    )
    operations, more_ops = _capped(
        _newest(
            RuntimeOperation.objects.alias(_v=search_vector("error_message"))
            .filter(_v=tsquery)
            .annotate(_headline=_headline("error_message", words))
        ).only(*OP_FIELDS)
    )
    return [
        Group(
            "message_text",
            "Message text",
            [_message_hit(links, m, highlight(m._headline)) for m in messages],
            more_messages,
        ),
        Group(
            "task_errors",
            "Task errors",
            [_task_hit(links, t, highlight(t._headline)) for t in tasks],
            more_tasks,
        ),
        Group(
            "operation_errors",
            "Operation errors",
            [_operation_hit(links, o, highlight(o._headline)) for o in operations],
            more_ops,
        ),
    ]
