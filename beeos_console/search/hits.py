"""What a search shows: hits grouped by kind, their links, highlighted text (no queries)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from django.db.models import F, Lookup, Value
from django.urls import reverse
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import gettext

from beeos_console.core.links import ObjectUrl, object_url, query_string
from beeos_console.mirror.columns import AGENT_URL
from beeos_console.search import query as q
from operations.models import RuntimeOperation
from tasks.models import Message, Task

CAP = 20  # hits per group and page
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
    more: bool = False  # more hits than shown (``next_cursor`` continues)
    note: str = ""
    # The keyset position after this page (``?more=<key>&after=<cursor>``): after the
    # last hit, or after the last row looked at when a bounded search stopped early.
    next_cursor: str = ""
    # A bounded search stopped before the end: older rows were not looked at.
    incomplete: bool = False

    def as_json(self) -> dict:
        return {
            "kind": self.key,
            "label": self.label,
            "more": self.more,
            "incomplete": self.incomplete,
            "next_cursor": self.next_cursor or None,
            "note": self.note,
            "hits": [hit.as_json() for hit in self.hits],
        }


@dataclass
class Results:
    query: q.Query
    groups: list[Group] = field(default_factory=list)
    # ``?more=<group>``: the next page of that one group only.
    paged: str = ""

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
        capped = any(group.more or group.incomplete for group in self.groups)
        if len(hits) == 1 and not capped and hits[0].headline is None and not self.paged:
            return hits[0]
        return None

    def as_json(self) -> dict:
        single = self.single
        return {
            "query": self.query.text,
            "redirect": single.url if single else None,
            "groups": [group.as_json() for group in self.groups if group.hits or group.note],
        }


class Links:
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


def exact_first(hits: list[Hit], text: str) -> list[Hit]:
    for hit in hits:
        hit.exact = hit.id == text
    return sorted(hits, key=lambda hit: not hit.exact)  # stable: newest first otherwise


def task_hit(links: Links, task: Task, headline: SafeString | None = None) -> Hit:
    return Hit(
        "task",
        task.task_id,
        links.task(task.task_id, protocol=task.protocol),
        f"{task.get_protocol_display()} · {task.status} ({task.raw_state})"
        + (" · " + gettext("agent %(id)s") % {"id": task.agent_id} if task.agent_id else ""),
        task.created_at,
        headline,
    )


def operation_hit(links: Links, op: RuntimeOperation, headline=None) -> Hit:
    return Hit(
        "operation",
        op.operation_id,
        links.operation(op.operation_id),
        f"{op.method} · {op.status} ({op.raw_status}) · "
        + gettext("instance %(id)s") % {"id": op.instance_id},
        op.created_at,
        headline,
    )


def message_hit(links: Links, message: Message, headline=None) -> Hit:
    where = (
        gettext("task %(id)s") % {"id": message.task.task_id}
        if message.task_id
        else gettext("no mirrored task")
    )
    return Hit(
        "message",
        message.message_id,
        links.message(message),
        f"{message.type or message.get_source_display()} · {message.state or '—'} · {where}",
        message.created_at,
        headline,
    )


def context_hit(links: Links, context_id: str) -> Hit:
    return Hit(
        "context", context_id, links.tasks + query_string({"q": context_id}), gettext("tasks")
    )


def agent_hit(links: Links, agent_id: str) -> Hit:
    """An agent: its page (counts, card, who it delegates to), like every agent id shown."""
    return Hit("agent", agent_id, object_url(AGENT_URL, agent_id), gettext("agent"))
