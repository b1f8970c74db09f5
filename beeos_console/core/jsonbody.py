"""Request bodies as JSON, parsed without ever failing with a 5xx.

Python's ``json`` parser recurses: a body of 100,000 ``[`` raises a
``RecursionError`` rather than a ``ValueError``, and a 5,000-digit integer a
plain ``ValueError``. ``loads`` turns every way a body can fail to be JSON the
console accepts into one ``BadJSON`` (a 400): malformed or non-UTF-8 text,
``NaN``/``Infinity`` (not JSON; PostgreSQL's ``jsonb`` refuses them), integers
too long to convert, and nesting deeper than ``MAX_DEPTH``. Used by the ingest
API, the webhook receiver and every DRF body (``core.api.JSONBodyParser``).
"""

from __future__ import annotations

import json
from typing import Any

from django.utils.translation import gettext

MAX_DEPTH = 64


class BadJSON(ValueError):
    """A body that is not JSON the console accepts; the message says why."""


def _no_constants(name: str) -> Any:
    raise BadJSON(gettext("%(name)s is not a JSON number") % {"name": name})


def loads(body: bytes | str, *, max_depth: int = MAX_DEPTH) -> Any:
    """The JSON value of ``body``; ``BadJSON`` for anything the console refuses."""
    try:
        value = json.loads(body, parse_constant=_no_constants)
    except BadJSON:
        raise
    except RecursionError as exc:
        raise BadJSON(_too_deep(max_depth)) from exc
    except UnicodeDecodeError as exc:
        raise BadJSON(gettext("the body is not UTF-8 text")) from exc
    except ValueError as exc:  # JSONDecodeError, and integers too long to convert
        raise BadJSON(gettext("malformed JSON: %(error)s") % {"error": exc}) from exc
    if nesting_depth(value, stop_after=max_depth) > max_depth:
        raise BadJSON(_too_deep(max_depth))
    return value


def _too_deep(max_depth: int) -> str:
    return gettext("JSON nested more than %(depth)s levels deep") % {"depth": max_depth}


def nesting_depth(value: Any, *, stop_after: int = MAX_DEPTH) -> int:
    """How deep arrays and objects nest in ``value`` (a scalar is 0), counted
    without recursion; stops counting once past ``stop_after``."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        depth += 1
        if depth > deepest:
            deepest = depth
            if deepest > stop_after:
                return deepest
        stack.extend((child, depth) for child in children)
    return deepest
