"""URLs built from object ids: each id percent-encoded as exactly one path segment.

Ids come from upstream (DESIGN.md, Storage rules): they may hold ``/``, ``?``,
``#``, ``%``, blanks or any letter. ``reverse(name, args=[id])`` leaves ``/``
(and ``?``'s neighbours ``;``, ``=``…) unencoded and would encode an already
encoded value a second time, so an id could name another path, a query or a
fragment. Here the id is quoted with ``safe=""`` — every reserved character,
``/`` included — and put into the reversed pattern in place of a placeholder.

The routes keep ``<path:…>``: WSGI servers decode ``%2F`` to ``/`` in
``PATH_INFO``, so the view receives the id as stored. Every link, form action
and htmx attribute naming an object uses ``object_url`` (or the template tag
``{% object_url %}``, or ``ObjectUrl`` for many rows at the cost of one reverse).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote, urlencode

from django.urls import reverse

_SLOT = "0ID0SLOT0"


def id_segment(object_id: str) -> str:
    """``object_id`` as one path segment: every reserved character encoded (``/`` too)."""
    return quote(str(object_id), safe="")


def query_string(query: dict[str, Any]) -> str:
    """``?a=1&b=2`` for the values that are not None ("" when there are none)."""
    pairs = [(key, value) for key, value in query.items() if value is not None]
    return f"?{urlencode(pairs)}" if pairs else ""


class ObjectUrl:
    """``object_url(viewname, id)`` for many ids at the cost of one ``reverse``.

    For URL patterns with one ``<path:…>`` (or ``<str:…>``) argument.
    """

    def __init__(self, viewname: str) -> None:
        self.prefix, _, self.suffix = reverse(viewname, args=[_SLOT]).partition(_SLOT)

    def __call__(self, object_id: str, **query: Any) -> str:
        return f"{self.prefix}{id_segment(object_id)}{self.suffix}{query_string(query)}"


def object_url(viewname: str, object_id: str, **query: Any) -> str:
    """The URL of ``viewname`` for ``object_id``, the id one encoded path segment.

    ``query`` adds a query string (None values left out), e.g.
    ``object_url("tasks:detail", "a/b", protocol="a2a")`` ->
    ``/tasks/a%2Fb/?protocol=a2a``.
    """
    return ObjectUrl(viewname)(object_id, **query)
