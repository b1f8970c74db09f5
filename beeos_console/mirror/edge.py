"""What every mirror write path shares: edge validation, digests, outcomes.

Snapshots arrive as wire JSON (dicts). They are validated here *before* any
write, so a bad record is refused whole with field errors and nothing is
half-saved. Vocabulary values (states, codes) are deliberately not validated:
an unknown one is stored raw and projected ``unmapped``.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import math
import re
from dataclasses import dataclass, field
from decimal import Decimal
from enum import StrEnum
from typing import Any

from django.conf import settings
from django.utils.dateparse import parse_datetime
from django.utils.translation import gettext, gettext_lazy

ID_MAX = 256
# Free text: a message body, a part's text, an error message, a cancel reason.
TEXT_MAX = 1_000_000
_DECIMAL_STRING = re.compile(r"0|[1-9][0-9]{0,19}")
# NUL and lone UTF-16 surrogates (JSON's "\ud800" escape parses to one): PostgreSQL
# stores neither in text or jsonb, so such a value is refused at the edge.
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")
# Characters that make an id display as something else: bidi overrides and
# isolates (U+202A–U+202E, U+2066–U+2069) and zero-width ones.
_DECEPTIVE = re.compile("[\u202a-\u202e\u2066-\u2069\u200b-\u200f\u2060\ufeff]")


def unstorable(value: str) -> bool:
    """True when PostgreSQL cannot store ``value`` as text (a NUL, a lone surrogate)."""
    return _UNSTORABLE.search(value) is not None


def id_problem(value: str) -> str | None:
    """Why ``value`` cannot be an id, or None (DESIGN.md, Storage rules).

    Ids end up in URLs, links and forms: no control characters, nothing that
    changes how they read, and no ``.``/``..`` path segment (a browser resolves
    those, so a link could reach another object's URL).
    """
    if _CONTROL.search(value):
        return gettext("contains a control character (a line break, a tab…); ids cannot")
    if _DECEPTIVE.search(value):
        return gettext("contains a bidi-override or zero-width character; ids cannot")
    if any(segment in (".", "..") for segment in value.split("/")):
        return gettext("contains a '.' or '..' path segment; ids cannot")
    return None


class Outcome(StrEnum):
    CREATED = "created"
    UPDATED = "updated"
    UNCHANGED = "unchanged"
    STALE = "stale"
    REJECTED = "rejected"


class IngestError(ValueError):
    """A snapshot that cannot be stored: field -> messages, nothing written."""

    def __init__(self, errors: dict[str, list[str]]) -> None:
        self.errors = errors
        super().__init__("; ".join(f"{k}: {', '.join(v)}" for k, v in errors.items()))


@dataclass(slots=True)
class IngestResult:
    outcome: Outcome
    object_id: str
    obj: Any = None
    note: str = ""


@dataclass
class Reader:
    """Reads typed fields out of one wire object, collecting every error at once."""

    data: Any
    prefix: str = ""
    errors: dict[str, list[str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.data, dict):
            self.fail("", gettext("must be a JSON object"))
            self.data = {}
        elif not self.prefix:
            # A whole wire object: every value in it, however deep, is checked
            # once here (``payload_problems``) before any field is read.
            for name, messages in payload_problems(self.data).items():
                for message in messages:
                    self.errors.setdefault(name, [])
                    if message not in self.errors[name]:
                        self.errors[name].append(message)

    def fail(self, key: str, message: str) -> None:
        name = f"{self.prefix}{key}" if key else (self.prefix.rstrip(".") or "data")
        messages = self.errors.setdefault(name, [])
        if message not in messages:  # the payload walk may have said it already
            messages.append(message)

    def child(self, key: str, *, required: bool = False) -> Reader | None:
        value = self.data.get(key)
        if value is None:
            if required:
                self.fail(key, gettext("is required"))
            return None
        reader = Reader(value, prefix=f"{self.prefix}{key}.", errors=self.errors)
        return reader

    def str(self, key: str, *, required: bool = False, max_length: int = ID_MAX) -> str:
        value = self.data.get(key)
        if value is None:
            if required:
                self.fail(key, gettext("is required"))
            return ""
        if not isinstance(value, str):
            self.fail(
                key, gettext("must be a string, not %(type)s") % {"type": type(value).__name__}
            )
            return ""
        if required and not value.strip():
            self.fail(key, gettext("must not be empty"))
        if len(value) > max_length:
            self.fail(key, _too_long(len(value), max_length))
            return ""
        if _UNSTORABLE.search(value):
            self.fail(key, str(_UNSTORABLE_MESSAGE))
            return ""
        return value

    def id(self, key: str) -> str:
        """A required identifier: it ends up in URLs and links, so no control characters."""
        value = self.str(key, required=True)
        problem = id_problem(value)
        if problem:
            self.fail(key, problem)
            return ""
        return value

    def text(self, key: str) -> str:
        return self.str(key, max_length=TEXT_MAX)

    def datetime(self, key: str, *, required: bool = False) -> dt.datetime | None:
        value = self.data.get(key)
        if value is None or value == "":
            if required:
                self.fail(key, gettext("is required"))
            return None
        if not isinstance(value, str):
            self.fail(key, gettext("must be an RFC 3339 timestamp string"))
            return None
        try:
            parsed = parse_datetime(value)
        except ValueError:
            parsed = None
        if parsed is None:
            self.fail(
                key, gettext("%(value)s is not an RFC 3339 timestamp") % {"value": repr(value[:40])}
            )
            return None
        if parsed.tzinfo is None:
            parsed = parsed.replace(tzinfo=dt.UTC)
        try:
            # Stored in UTC: PostgreSQL refuses some offsets Python accepts.
            return parsed.astimezone(dt.UTC)
        except OverflowError:
            self.fail(key, gettext("%(value)s is out of range") % {"value": repr(value[:40])})
            return None

    def decimal_string(self, key: str, *, required: bool = False) -> Decimal | None:
        """BeeOS sequences and revisions: unsigned decimal strings (uint64 range)."""
        value = self.data.get(key)
        if value is None:
            if required:
                self.fail(key, gettext("is required"))
            return None
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            value = str(value)
        if not isinstance(value, str) or not _DECIMAL_STRING.fullmatch(value):
            self.fail(key, gettext('must be an unsigned decimal string such as "42"'))
            return None
        return Decimal(value)

    def bool(self, key: str, *, required: bool = False) -> bool:
        value = self.data.get(key)
        if value is None:
            if required:
                self.fail(key, gettext("is required"))
            return False
        if not isinstance(value, bool):
            self.fail(key, gettext("must be true or false"))
            return False
        return value

    def object(self, key: str) -> dict[str, Any]:
        value = self.data.get(key)
        if value is None:
            return {}
        if not isinstance(value, dict):
            self.fail(key, gettext("must be a JSON object"))
            return {}
        return value

    def list(self, key: str) -> list[Any]:
        value = self.data.get(key)
        if value is None:
            return []
        if not isinstance(value, list):
            self.fail(key, gettext("must be a JSON array"))
            return []
        return value

    def any(self, key: str) -> Any:
        return self.data.get(key)

    def raise_if_invalid(self) -> None:
        if self.errors:
            raise IngestError(self.errors)


def digest(payload: Any) -> str:
    """A stable fingerprint of a snapshot: the same snapshot twice changes nothing."""
    canonical = json.dumps(payload, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def json_safe(payload: Any) -> Any:
    """The payload as it will be stored in a JSONField (round-tripped once).

    Checked first with ``payload_problems``: a value PostgreSQL would refuse
    (NUL, a lone surrogate, a non-finite number) or that is out of bounds
    refuses the snapshot whole, with field errors naming each path, instead of
    failing half-way through a write.
    """
    problems = payload_problems(payload)
    if problems:
        raise IngestError(problems)
    return stored_json(payload)


def stored_json(checked: Any) -> Any:
    """``checked`` as a JSONField will store it, for a payload a top-level ``Reader``
    has already walked (``payload_problems`` ran there: no second walk)."""
    return json.loads(json.dumps(checked, default=str))


_UNSTORABLE_MESSAGE = gettext_lazy(
    "contains a NUL character (\\u0000) or an unpaired surrogate (\\ud800-\\udfff), "
    "which cannot be stored"
)

# --- the payload walk: one set of limits for every value a snapshot carries --------

# Deepest nesting within one record (a request body allows 64 levels in all:
# ``beeos_console.core.jsonbody``); most items in one array or object.
DEPTH_MAX = 32
ITEMS_MAX = 10_000
KEY_MAX = 256
URI_MAX = 8192
# A file part's base64 content: bounded by the request body cap, not here.
BYTES_MAX = 16 * 1024 * 1024
# Errors listed per record; the rest are counted.
PROBLEMS_MAX = 20
# Strings under these keys are names: ids, roles, states, types, codes, MIME types.
_NAME_KEYS = frozenset(
    ("id", "name", "role", "kind", "type", "state", "method", "code", "mimetype", "mime_type")
)


def string_limit(key: str | None) -> int:
    """The longest string stored under ``key`` (the kind of field it is)."""
    if key is None:
        return TEXT_MAX
    lowered = key.lower()
    if lowered in _NAME_KEYS or lowered.endswith("_id") or key.endswith("Id"):
        return ID_MAX
    if lowered.endswith(("uri", "url", "href")):
        return URI_MAX
    if lowered == "bytes":
        return BYTES_MAX
    return TEXT_MAX


def _too_long(length: int, limit: int) -> str:
    return gettext("is %(length)s characters long; at most %(limit)s are allowed") % {
        "length": length,
        "limit": limit,
    }


def payload_problems(payload: Any) -> dict[str, list[str]]:
    """What in ``payload`` cannot be stored, by path (``history[3].parts[0].text``).

    One walk over the whole JSON value with one set of limits: string length
    by kind of field (``string_limit``), NUL and lone surrogates anywhere
    (keys included), non-finite numbers, array and object sizes, and depth.
    """
    problems: dict[str, list[str]] = {}
    found = 0

    def problem(path: str, message: str) -> None:
        nonlocal found
        found += 1
        if found <= PROBLEMS_MAX:
            problems.setdefault(path or "data", []).append(message)

    def walk(value: Any, path: str, key: str | None, depth: int) -> None:
        if isinstance(value, str):
            limit = string_limit(key)
            if len(value) > limit:
                problem(path, _too_long(len(value), limit))
            elif _UNSTORABLE.search(value):
                problem(path, str(_UNSTORABLE_MESSAGE))
        elif isinstance(value, float):
            if not math.isfinite(value):
                problem(
                    path, gettext("is not a finite number (out of range), which cannot be stored")
                )
        elif isinstance(value, dict | list):
            if depth >= DEPTH_MAX:
                problem(
                    path, gettext("nests more than %(depth)s levels deep") % {"depth": DEPTH_MAX}
                )
                return
            if len(value) > ITEMS_MAX:
                problem(
                    path,
                    gettext("has %(items)s items; at most %(max)s are allowed")
                    % {"items": len(value), "max": ITEMS_MAX},
                )
                return
            if isinstance(value, list):
                for index, item in enumerate(value):
                    walk(item, f"{path}[{index}]", key, depth + 1)
                return
            for name, item in value.items():
                name = str(name)
                if len(name) > KEY_MAX:
                    problem(
                        path,
                        gettext("has a key %(length)s characters long; at most %(max)s")
                        % {"length": len(name), "max": KEY_MAX},
                    )
                elif _UNSTORABLE.search(name):
                    problem(
                        path,
                        gettext("has a key that %(problem)s") % {"problem": _UNSTORABLE_MESSAGE},
                    )
                else:
                    walk(item, f"{path}.{name}" if path else name, name, depth + 1)

    walk(payload, "", None, 0)
    if found > PROBLEMS_MAX:
        problems.setdefault("data", []).append(
            gettext("… and %(count)s more problems") % {"count": found - PROBLEMS_MAX}
        )
    return problems


def max_clock_skew() -> dt.timedelta:
    """How far ahead an upstream clock may run (``CONSOLE_MAX_CLOCK_SKEW``, default 5 min)."""
    return settings.CONSOLE_MAX_CLOCK_SKEW


def future_bound(now: dt.datetime | None = None) -> dt.datetime:
    """now + ``CONSOLE_MAX_CLOCK_SKEW``: a stamp beyond it is not trusted for ordering."""
    return (now or dt.datetime.now(dt.UTC)) + max_clock_skew()


def is_future(stamp: Any, *, now: dt.datetime | None = None) -> bool:
    """True for a timestamp beyond now + ``CONSOLE_MAX_CLOCK_SKEW`` (upstream clock skew)."""
    return isinstance(stamp, dt.datetime) and stamp > future_bound(now)


def clock_note(stamp: Any, *, now: dt.datetime | None = None) -> str:
    """The producer note a stored snapshot gets when it is stamped in the future, or ""."""
    if not is_future(stamp, now=now):
        return ""
    return gettext(
        "stamped in the future (clock skew): updatedAt %(stamp)s is more than "
        "%(skew)s s ahead; stored, ordered as now + skew"
    ) % {"stamp": stamp.isoformat(), "skew": int(max_clock_skew().total_seconds())}


def is_older(incoming: Any, stored: Any, *, now: dt.datetime | None = None) -> bool:
    """True when the incoming ordering key is known and older than the stored one.

    The one ordering rule by timestamp of every mirror write path (both the
    one-record and the batch path ask ``decide_*``, which ask this).

    Clock skew (DESIGN.md, Storage rules) can't freeze an object: a stamp more
    than ``CONSOLE_MAX_CLOCK_SKEW`` in the future counts as now + skew. An
    incoming snapshot stamped so is stored (with a producer note) and orders as
    now + skew. A *stored* stamp beyond now + skew stays stored for inspection
    (the projection audit lists it) but makes no snapshot stale: every real
    stamp is earlier than now + skew, so holding it against them would freeze
    the object until that time — the next real snapshot applies. The other
    rules (same snapshot, terminal never goes back) still apply.
    """
    if incoming is None or stored is None:
        return False
    if not isinstance(stored, dt.datetime):
        return incoming < stored
    bound = future_bound(now)
    if stored > bound:
        return False
    if isinstance(incoming, dt.datetime) and incoming > bound:
        incoming = bound
    return incoming < stored
