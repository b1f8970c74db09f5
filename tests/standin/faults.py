"""Fault injection and request recording for the stand-in (no SDK, no Django)."""

from __future__ import annotations

import fnmatch
import json
import re
import threading
from dataclasses import dataclass, field
from typing import Any

# Fault kinds.
RESPOND = "respond"  # answer with a canned status/body instead of the real handler
DELAY = "delay"  # run the real handler, then hold the answer back for `seconds`
DROP = "drop"  # read the request, then close the connection without answering


@dataclass
class Fault:
    """One injected fault: matches ``method`` + ``pattern`` the next ``times`` requests.

    ``pattern`` is an ``fnmatch`` glob over the path (no query string; ``*`` also
    matches ``/``) or a compiled regular expression (``search``). ``times=None`` means
    every matching request until :meth:`BeeOSStandIn.clear_faults`.
    """

    kind: str
    pattern: str | re.Pattern[str]
    method: str | None = None
    times: int | None = 1
    status: int = 0
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    content_type: str = "application/json"
    seconds: float = 0.0
    apply_effect: bool = True
    hits: int = 0

    def matches(self, method: str, path: str) -> bool:
        if self.method and self.method.upper() != method.upper():
            return False
        if isinstance(self.pattern, re.Pattern):
            return self.pattern.search(path) is not None
        return fnmatch.fnmatchcase(path, self.pattern)

    @property
    def exhausted(self) -> bool:
        return self.times is not None and self.hits >= self.times


@dataclass(frozen=True)
class RecordedRequest:
    """A request as the stand-in received it (recorded before any fault or auth check)."""

    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: bytes
    time: float
    fault: str | None = None

    def header(self, name: str, default: str | None = None) -> str | None:
        """Case-insensitive header lookup."""
        lowered = name.lower()
        for key, value in self.headers.items():
            if key.lower() == lowered:
                return value
        return default

    @property
    def json(self) -> Any:
        return json.loads(self.body) if self.body else None


@dataclass(frozen=True)
class Effect:
    """A state change the stand-in applied (what "exactly one effect" assertions count)."""

    kind: str
    object_id: str
    detail: dict[str, Any] = field(default_factory=dict)


class FaultBook:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._faults: list[Fault] = []

    def add(self, fault: Fault) -> Fault:
        with self._lock:
            self._faults.append(fault)
        return fault

    def clear(self) -> None:
        with self._lock:
            self._faults.clear()

    def take(self, method: str, path: str) -> Fault | None:
        """The first live fault matching the request; counts the hit."""
        with self._lock:
            for fault in self._faults:
                if not fault.exhausted and fault.matches(method, path):
                    fault.hits += 1
                    return fault
        return None
