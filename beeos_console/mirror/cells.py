"""HTML for one value in a list cell: badges, raw values, ages, truncated ids.

Plain functions returning escaped strings, so a list of fifty rows can be
built in Python the way ``contrib.admin`` builds its changelist rows
(``items_for_result``), instead of through a template per cell. The template
tags in ``templatetags/console.py`` call the same functions.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from html import escape
from urllib.parse import quote

from django.urls import reverse
from django.utils import timezone
from django.utils.safestring import SafeString, mark_safe
from django.utils.text import Truncator

from beeos_console.mirror.states import STATUS_COLOURS

# The characters ``reverse()`` leaves unquoted in a path argument (RFC 3986 pchar).
_PATH_SAFE = "!$&'()*+,;=/~:@"
_SLOT = "0ID0SLOT0"


def badge(status: str) -> str:
    """Text plus colour, never colour alone; unknown values still render."""
    colour = STATUS_COLOURS.get(status, "purple")
    return f'<span class="badge badge-{escape(colour)}">{escape(status or "—")}</span>'


def raw(value: object) -> str:
    """A raw upstream value, verbatim in monospace (escaped)."""
    if value is None or value == "":
        return '<code class="raw empty">—</code>'
    return f'<code class="raw">{escape(str(value))}</code>'


def age(value: dt.datetime | None, now: dt.datetime | None = None) -> str:
    """ "3 h ago", with the exact UTC time on hover."""
    if value is None:
        return '<span class="muted">—</span>'
    exact = value.astimezone(dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    return (
        f'<time datetime="{escape(value.isoformat())}" title="{escape(exact)}">'
        f"{escape(short_age(value, now))}</time>"
    )


def short_age(value: dt.datetime, now: dt.datetime | None = None) -> str:
    """The largest unit only: "45 s ago", "3 h ago", "2 d ago", "in 5 min"."""
    now = now or timezone.now()
    seconds = int((now - value).total_seconds())
    future, seconds = seconds < 0, abs(seconds)
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            words = f"{seconds // size} {unit}"
            break
    else:
        words = f"{seconds} s"
    return f"in {words}" if future else f"{words} ago"


def truncate(text: str, length: int) -> str:
    """What ``|truncatechars:length`` prints (unescaped), without its cost on plain ids."""
    if len(text) <= length and text.isascii():
        return text
    if text.isascii():
        return text[: length - 1] + "…"
    return str(Truncator(text).chars(length))


def path_arg(value: str) -> str:
    """``value`` quoted as ``reverse()`` quotes a ``<path:…>`` argument."""
    return quote(value, safe=_PATH_SAFE)


def filter_link(param: str, value: str, *, title: str, length: int) -> str:
    """The value, shortened, as a link to this list filtered on it (``?param=value``)."""
    return (
        f'<a href="?{escape(param)}={escape(quote(value, safe="/"))}" title="{escape(title)}">'
        f"<code>{escape(truncate(value, length))}</code></a>"
    )


class UrlFor:
    """``reverse(name, args=[value])`` for many values at the cost of one ``reverse``.

    For URL patterns with one ``<path:…>`` argument (ids may hold slashes).
    """

    def __init__(self, name: str) -> None:
        self.pattern = reverse(name, args=[_SLOT])

    def __call__(self, value: str) -> str:
        return self.pattern.replace(_SLOT, path_arg(value), 1)


def table(headers: Iterable[str], rows: list[str], *, selectable: bool, empty: str) -> SafeString:
    """A list's ``<table>`` around its built rows; ``selectable`` adds the checkbox column."""
    headers = list(headers)
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    if selectable:
        head = '<th><span class="visually-hidden">Select</span></th>' + head
    width = len(headers) + selectable
    body = rows or [f'<tr><td colspan="{width}" class="muted">{escape(empty)}</td></tr>']
    return mark_safe(
        f'<table class="list">\n  <thead><tr>{head}</tr></thead>\n  <tbody>\n    '
        + "\n    ".join(body)
        + "\n  </tbody>\n</table>\n"
    )
