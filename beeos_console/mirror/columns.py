"""Column types that know the product: status badges, raw values, ages, ids, filter links.

The ``core.tables.Table`` classes of every list (``tasks/tables.py``,
``operations/tables.py``, the dashboard) declare these; the template tags in
``templatetags/console.py`` print the same cells on detail pages through the
functions below. Everything is built with ``format_html``: escaped.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import quote

from django.utils.html import format_html
from django.utils.safestring import SafeString
from django.utils.translation import gettext

from beeos_console.core.links import ObjectUrl
from beeos_console.core.tables import (
    AgeColumn,
    Column,
    Table,
    age,
    id_parts,
    middle,
    register_cell,
    short_age,
    truncate,
)
from beeos_console.mirror.i18n import status_label
from beeos_console.mirror.states import STATUS_COLOURS

__all__ = [
    "AgeColumn",
    "AgentColumn",
    "FilterLinkColumn",
    "IdColumn",
    "RawColumn",
    "StatusColumn",
    "UrlFor",
    "age",
    "agent_link",
    "badge",
    "middle",
    "raw",
    "short_age",
    "short_id",
    "truncate",
    "url_for",
]


def badge(status: str) -> SafeString:
    """Text plus colour, never colour alone; unknown values still render (as they are).

    The text is the status's label in the reader's language; the stored value stays
    the English code (filters, the API, the CSV export).
    """
    colour = STATUS_COLOURS.get(status, "purple")
    return format_html(
        '<span class="badge badge-{}">{}</span>', colour, status_label(status) or "—"
    )


# The audit log (a lower layer) draws before/after statuses with the same badge.
register_cell("status", badge)


def raw(value: object) -> SafeString:
    """A raw upstream value, verbatim in monospace (escaped)."""
    if value is None or value == "":
        return format_html('<code class="raw empty">{}</code>', "—")
    return format_html('<code class="raw">{}</code>', value)


class UrlFor(ObjectUrl):
    """``object_url(name, value)`` (``beeos_console.core.links``) for many rows.

    The id is one percent-encoded path segment (``/``, ``?``, ``#`` included).
    """


def url_for(table: Table, name: str) -> UrlFor:
    """The table's ``UrlFor(name)``: one ``reverse()`` per table render, not per row."""
    urls = table.__dict__.setdefault("_urls", {})
    found = urls.get(name)
    if found is None:
        found = urls[name] = UrlFor(name)
    return found


class StatusColumn(Column):
    """The product status as a badge: text plus its colour."""

    cache = True

    def render(self, value: Any, row: Any, table: Table) -> SafeString:
        return badge(value)


class RawColumn(Column):
    """A raw upstream value, verbatim in monospace ("—" when empty)."""

    cache = True

    def render(self, value: Any, row: Any, table: Table) -> SafeString:
        return raw(value)


class IdColumn(Column):
    """An id in monospace, linked to its detail page (``url``: a URL name).

    Never broken mid-token: a middle ellipsis (``tsk_abc…xyz``) to ``length``
    characters, the full id on hover (``title``) and a copy button (the id
    stays selectable without JavaScript). ``query`` (a table method name) adds
    a query string to the link, e.g. the protocol that tells two tasks with one
    id apart.
    """

    def __init__(
        self,
        *args: Any,
        url: str,
        length: int,
        query: str | None = None,
        **kwargs: Any,
    ) -> None:
        self.url_name, self.length, self.query = url, length, query
        super().__init__(*args, **kwargs)

    def href(self, value: str, row: Any, table: Table) -> str:
        href = url_for(table, self.url_name)(value)
        if self.query:
            href += getattr(table, self.query)(row)
        return href

    def parts(self, value: Any, row: Any, table: Table) -> tuple[str, ...]:
        return id_parts(value, self.length, self.href(value, row, table), table.gettext)


def short_id(
    value: str, length: int = 24, href: str | None = None, tr: Callable[[str], str] = gettext
) -> SafeString:
    """An id cell anywhere (templates, render methods): middle ellipsis, title, copy button.

    ``tr``: the ``gettext`` to use (a table's ``Table.gettext`` in its rows).
    """
    if not value:
        return format_html('<span class="muted">{}</span>', "—")
    return format_html(*id_parts(value, length, href, tr))


class FilterLinkColumn(Column):
    """The value, shortened, linked to this list filtered on it (``?param=value``).

    Drawn as parts of the row (not cached per value: ids rarely repeat on a page).
    """

    def __init__(self, *args: Any, param: str, title: str, length: int, **kwargs: Any) -> None:
        self.param, self.title, self.length = param, title, length
        super().__init__(*args, **kwargs)

    def parts(self, value: Any, row: Any, table: Table) -> tuple[str, ...]:
        return (
            '<a href="?{}={}" title="{}"><code>{}</code></a>',
            self.param,
            quote(value, safe="/"),
            table.text(self.title).format(value=value),
            truncate(value, self.length),
        )


# Every agent id the console shows links to its agent page (``agents:detail``): the one
# rule, for tables (``AgentColumn``), templates (``{% agent_link %}``) and Python.
AGENT_URL = "agents:detail"


def agent_link(agent_id: str, length: int = 24, href: str | None = None) -> SafeString:
    """An agent id, shortened in the middle, linked to its agent page ("—" when empty)."""
    return format_html(*_agent_link_parts(agent_id, length, href))


def _agent_link_parts(agent_id: str, length: int, href: str | None) -> tuple[str, ...]:
    if not agent_id:
        return ('<span class="muted">{}</span>', "—")
    return (
        '<a class="agent-link" href="{}" title="{}"><code>{}</code></a>',
        href or ObjectUrl(AGENT_URL)(agent_id),
        agent_id,
        middle(agent_id, length),
    )


class AgentColumn(Column):
    """An agent id linked to its agent page; with ``param``, a "only this agent" filter
    link of the current list beside it.

    Drawn as parts of the row (not cached per value: ids rarely repeat on a page).
    """

    def __init__(
        self, *args: Any, length: int, param: str = "", title: str = "", **kwargs: Any
    ) -> None:
        self.length, self.param, self.title = length, param, title
        super().__init__(*args, **kwargs)

    def parts(self, value: Any, row: Any, table: Table) -> tuple[str, ...]:
        link = _agent_link_parts(
            value, self.length, url_for(table, AGENT_URL)(value) if value else None
        )
        if not value or not self.param:
            return link
        title = table.text(self.title)
        return (
            link[0]
            + ' <a class="filter-link small" href="?{}={}" title="{}" aria-label="{}">{}</a>',
            *link[1:],
            self.param,
            quote(value, safe="/"),
            title,
            title,
            "⊆",
        )
