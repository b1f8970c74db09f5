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
import re
from dataclasses import dataclass, field
from decimal import Decimal
from enum import StrEnum
from typing import Any

from django.utils.dateparse import parse_datetime

ID_MAX = 256
_DECIMAL_STRING = re.compile(r"0|[1-9][0-9]{0,19}")
# NUL and lone UTF-16 surrogates (JSON's "\ud800" escape parses to one): PostgreSQL
# stores neither in text or jsonb, so such a value is refused at the edge.
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")
# Characters that make an id display as something else: bidi overrides and
# isolates (U+202A–U+202E, U+2066–U+2069) and zero-width ones.
_DECEPTIVE = re.compile("[\u202a-\u202e\u2066-\u2069\u200b-\u200f\u2060\ufeff]")


def id_problem(value: str) -> str | None:
    """Why ``value`` cannot be an id, or None (DESIGN.md, Storage rules).

    Ids end up in URLs, links and forms: no control characters, nothing that
    changes how they read, and no ``.``/``..`` path segment (a browser resolves
    those, so a link could reach another object's URL).
    """
    if _CONTROL.search(value):
        return "contains a control character (a line break, a tab…); ids cannot"
    if _DECEPTIVE.search(value):
        return "contains a bidi-override or zero-width character; ids cannot"
    if any(segment in (".", "..") for segment in value.split("/")):
        return "contains a '.' or '..' path segment; ids cannot"
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
            self.fail("", "must be a JSON object")
            self.data = {}

    def fail(self, key: str, message: str) -> None:
        name = f"{self.prefix}{key}" if key else (self.prefix.rstrip(".") or "data")
        self.errors.setdefault(name, []).append(message)

    def child(self, key: str, *, required: bool = False) -> Reader | None:
        value = self.data.get(key)
        if value is None:
            if required:
                self.fail(key, "is required")
            return None
        reader = Reader(value, prefix=f"{self.prefix}{key}.", errors=self.errors)
        return reader

    def str(self, key: str, *, required: bool = False, max_length: int = ID_MAX) -> str:
        value = self.data.get(key)
        if value is None:
            if required:
                self.fail(key, "is required")
            return ""
        if not isinstance(value, str):
            self.fail(key, f"must be a string, not {type(value).__name__}")
            return ""
        if required and not value.strip():
            self.fail(key, "must not be empty")
        if len(value) > max_length:
            self.fail(key, f"is {len(value)} characters long; at most {max_length} are allowed")
            return ""
        if _UNSTORABLE.search(value):
            self.fail(key, _UNSTORABLE_MESSAGE)
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
        return self.str(key, max_length=1_000_000)

    def datetime(self, key: str, *, required: bool = False) -> dt.datetime | None:
        value = self.data.get(key)
        if value is None or value == "":
            if required:
                self.fail(key, "is required")
            return None
        if not isinstance(value, str):
            self.fail(key, "must be an RFC 3339 timestamp string")
            return None
        try:
            parsed = parse_datetime(value)
        except ValueError:
            parsed = None
        if parsed is None:
            self.fail(key, f"{value[:40]!r} is not an RFC 3339 timestamp")
            return None
        if parsed.tzinfo is None:
            parsed = parsed.replace(tzinfo=dt.UTC)
        try:
            # Stored in UTC: PostgreSQL refuses some offsets Python accepts.
            return parsed.astimezone(dt.UTC)
        except OverflowError:
            self.fail(key, f"{value[:40]!r} is out of range")
            return None

    def decimal_string(self, key: str, *, required: bool = False) -> Decimal | None:
        """BeeOS sequences and revisions: unsigned decimal strings (uint64 range)."""
        value = self.data.get(key)
        if value is None:
            if required:
                self.fail(key, "is required")
            return None
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            value = str(value)
        if not isinstance(value, str) or not _DECIMAL_STRING.fullmatch(value):
            self.fail(key, 'must be an unsigned decimal string such as "42"')
            return None
        return Decimal(value)

    def bool(self, key: str, *, required: bool = False) -> bool:
        value = self.data.get(key)
        if value is None:
            if required:
                self.fail(key, "is required")
            return False
        if not isinstance(value, bool):
            self.fail(key, "must be true or false")
            return False
        return value

    def object(self, key: str) -> dict[str, Any]:
        value = self.data.get(key)
        if value is None:
            return {}
        if not isinstance(value, dict):
            self.fail(key, "must be a JSON object")
            return {}
        return value

    def list(self, key: str) -> list[Any]:
        value = self.data.get(key)
        if value is None:
            return []
        if not isinstance(value, list):
            self.fail(key, "must be a JSON array")
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

    PostgreSQL cannot store NUL in text or jsonb: refuse such a snapshot
    whole, with a clear error, instead of failing half-way through a write.
    """
    safe = json.loads(json.dumps(payload, default=str))
    if _unstorable(safe):
        raise IngestError({"data": [_UNSTORABLE_MESSAGE]})
    return safe


_UNSTORABLE_MESSAGE = (
    "contains a NUL character (\\u0000) or an unpaired surrogate (\\ud800-\\udfff), "
    "which cannot be stored"
)


def _unstorable(value: Any) -> bool:
    if isinstance(value, str):
        return _UNSTORABLE.search(value) is not None
    if isinstance(value, dict):
        return any(_unstorable(k) or _unstorable(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_unstorable(v) for v in value)
    return False


# Upstream clocks may run a little ahead; a stamp beyond this is not trusted for ordering.
MAX_CLOCK_SKEW = dt.timedelta(minutes=5)


def is_older(incoming: Any, stored: Any, *, now: dt.datetime | None = None) -> bool:
    """True when the incoming ordering key is known and older than the stored one.

    A stored stamp more than ``MAX_CLOCK_SKEW`` in the future (upstream clock
    skew) stays stored for inspection but orders nothing: otherwise it would
    freeze the object until that time (DESIGN.md, Storage rules). The other
    rules (same snapshot, terminal never goes back) still apply.
    """
    if incoming is None or stored is None:
        return False
    limit = (now or dt.datetime.now(dt.UTC)) + MAX_CLOCK_SKEW
    if isinstance(stored, dt.datetime) and stored > limit:
        return False
    return incoming < stored
