"""What a search box entry asks for: a pasted URL's object, an id fragment, words.

Pure: no database. ``parse("https://beeos.example/api/v1/agents/a1/tasks/t%2F1")``
names the task ``t/1``; ``parse("0123Qm")`` is an id fragment and words.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from urllib.parse import parse_qs, unquote, urlsplit

from django.utils.translation import gettext

MAX_QUERY = 1024  # an id is at most 256 characters; a URL naming two ids fits
MIN_FRAGMENT = 3  # a trigram index needs three characters

TASK, OPERATION, MESSAGE, CONTEXT, AGENT = "task", "operation", "message", "context", "agent"

# Path collections (the console's pages, its API and the BeeOS platform API,
# ../shared/contracts/beeos-platform-v1.yaml) and what the next segment names.
COLLECTIONS = {
    "tasks": TASK,
    "operations": OPERATION,
    "messages": MESSAGE,
    "conversations": CONTEXT,
    "contexts": CONTEXT,
    "agents": AGENT,
}
# The most specific kind a URL names wins: /agents/A/tasks/T names the task T.
PRIORITY = {TASK: 0, OPERATION: 0, MESSAGE: 0, CONTEXT: 1, AGENT: 2}
# Query parameters of the console's list pages that name one object.
QUERY_PARAMS = {"task": TASK, "conversation": CONTEXT, "agent_id": AGENT}
_CONSOLE_DETAIL = re.compile(r"^/(tasks|operations)/(.+?)/?$")
_URL = re.compile(r"^(https?://|/)", re.IGNORECASE)


@dataclass(frozen=True)
class Target:
    """An object a pasted URL names: its kind and the ids it may have (most likely first)."""

    kind: str
    ids: tuple[str, ...]
    protocol: str = ""


@dataclass(frozen=True)
class Query:
    text: str  # as typed (stripped, bounded, no NUL)
    target: Target | None = None  # a pasted URL named this object
    fragment: str = ""  # an id fragment to look for anywhere in ids
    words: str = ""  # full-text search
    notes: list[str] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not (self.target or self.fragment or self.words)


def clean(raw: str | None) -> str:
    """Stripped, at most ``MAX_QUERY`` characters, without NUL (PostgreSQL refuses it)."""
    return (raw or "").replace("\x00", "").strip()[:MAX_QUERY]


def parse(raw: str | None) -> Query:
    text = clean(raw)
    if not text:
        return Query(text="")
    if _URL.match(text) and " " not in text:
        target = url_target(text)
        if target is not None:
            return Query(text=text, target=target)
    fragment = text if len(text) >= MIN_FRAGMENT else ""
    notes = (
        []
        if fragment
        else [gettext("Ids are searched from %(count)s characters on.") % {"count": MIN_FRAGMENT}]
    )
    return Query(text=text, fragment=fragment, words=text, notes=notes)


def url_target(url: str) -> Target | None:
    """The object a console or BeeOS URL names, or None when it names none."""
    parts = urlsplit(url)
    path = parts.path
    params = parse_qs(parts.query)
    protocol = (params.get("protocol") or [""])[0]
    # Segments split on "/" first, then decoded: an id's "%2F" stays inside its segment.
    segments = path.split("/")
    found: list[tuple[int, int, str, str]] = []
    for i, segment in enumerate(segments[:-1]):
        kind = COLLECTIONS.get(segment.lower())
        value = unquote(segments[i + 1])
        if kind and value:
            found.append((PRIORITY[kind], -i, kind, value))
    if found:
        _, _, kind, value = min(found)
        ids = [value]
        # A console link to an id holding an unencoded "/": /tasks/a/b/ names "a/b".
        match = _CONSOLE_DETAIL.match(path)
        if match and COLLECTIONS[match.group(1)] == kind:
            whole = unquote(re.sub(r"/cancel$", "", match.group(2)))
            if whole not in ids:
                ids.append(whole)
        return Target(kind=kind, ids=tuple(ids), protocol=protocol if kind == TASK else "")
    for name, kind in QUERY_PARAMS.items():
        value = clean((params.get(name) or [""])[0])
        if value:
            return Target(kind=kind, ids=(value,))
    return None


def like_pattern(fragment: str) -> str:
    """``%fragment%`` for ILIKE, the fragment's own ``\\ % _`` taken literally."""
    escaped = fragment.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"
