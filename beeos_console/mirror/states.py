"""The product projection's shared vocabulary: pure Python, no Django imports.

Every BeeOS state machine (OpenAPI task, A2A task, message envelope, runtime
operation) is shown under one product status. The per-protocol tables live in
``tasks/states.py`` and ``operations/states.py``; this module holds what they
share: the five product statuses, certainty, retry policy, the ``Projection``
result and the ``Rule`` that explains it.

Bump ``PROJECTION_VERSION`` whenever a table row changes meaning: rows stamped
with an older version are then due for re-projection.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Final, Generic, TypeVar

V = TypeVar("V")

# 2: runtime operations read effectState; product producers' failure details
# are kept; every reader is case-insensitive.
PROJECTION_VERSION: Final = 2

# Product status (seed: "Product task projection").
QUEUED: Final = "queued"
PROCESSING: Final = "processing"
COMPLETED: Final = "completed"
FAILED: Final = "failed"
CANCELLED: Final = "cancelled"
# Not a product status: the display value for a raw value no table knows.
UNMAPPED: Final = "unmapped"

PRODUCT_STATUSES: Final = (QUEUED, PROCESSING, COMPLETED, FAILED, CANCELLED)
TERMINAL_PRODUCT_STATUSES: Final = frozenset({COMPLETED, FAILED, CANCELLED})
ACTIVE_PRODUCT_STATUSES: Final = frozenset({QUEUED, PROCESSING})
DISPLAY_STATUSES: Final = (*PRODUCT_STATUSES, UNMAPPED)

CERTAIN: Final = "certain"
UNCERTAIN: Final = "uncertain"
OUTCOME_CERTAINTIES: Final = (CERTAIN, UNCERTAIN)

RETRY_NONE: Final = "none"
SAFE_TO_RETRY: Final = "safe_to_retry"
MANUAL_REVIEW: Final = "manual_review"
RETRY_POLICIES: Final = (RETRY_NONE, SAFE_TO_RETRY, MANUAL_REVIEW)

# Where a table row comes from: the BeeOS seed documents, or our own decision
# where the seeds are silent (DESIGN.md marks each).
SEED: Final = "seed"
OURS: Final = "ours"

# Colour per display status (NetBox-style choices): never shown without text.
STATUS_COLOURS: Final = {
    QUEUED: "grey",
    PROCESSING: "blue",
    COMPLETED: "green",
    FAILED: "red",
    CANCELLED: "amber",
    UNMAPPED: "purple",
}


@dataclass(frozen=True, slots=True)
class Projection:
    """What a raw state means for the product, and the rule that decided it."""

    status: str
    reason: str
    outcome_certainty: str
    retry_policy: str
    rule: str
    source: str

    @property
    def is_terminal(self) -> bool:
        return self.status in TERMINAL_PRODUCT_STATUSES

    @property
    def is_unmapped(self) -> bool:
        return self.status == UNMAPPED

    def as_fields(self) -> dict[str, str | int]:
        """The model fields every mirrored row stores next to its raw values."""
        return {
            "status": self.status,
            "reason": self.reason,
            "outcome_certainty": self.outcome_certainty,
            "retry_policy": self.retry_policy,
            "projection_rule": self.rule,
            "projection_version": PROJECTION_VERSION,
        }

    def describe(self) -> str:
        """The outcome as symbols, e.g. ``failed · timeout · uncertain · manual_review``.

        Stored codes only (never translated): the rule syntax admins read beside the
        plain-words sentences, which ``words.py`` says in the reader's language."""
        parts = [self.status]
        if self.reason:
            parts.append(self.reason)
        parts.append(self.outcome_certainty)
        parts.append(self.retry_policy)
        return " · ".join(parts)


@dataclass(frozen=True, slots=True)
class Row:
    """One row of a state table: the projection of one raw value."""

    status: str
    reason: str = ""
    outcome_certainty: str = CERTAIN
    retry_policy: str = RETRY_NONE
    source: str = SEED

    def project(self, rule: str, **overrides: str) -> Projection:
        values = {
            "status": self.status,
            "reason": self.reason,
            "outcome_certainty": self.outcome_certainty,
            "retry_policy": self.retry_policy,
            "source": self.source,
        }
        values.update(overrides)
        return Projection(rule=rule, **values)


def unmapped(rule_prefix: str) -> Projection:
    """A raw value no table knows: stored raw, never guessed, never a crash.

    ``uncertain`` + ``manual_review``: we cannot tell what happened, so nothing
    may be replayed automatically.
    """
    return Projection(
        status=UNMAPPED,
        reason="unmapped_state",
        outcome_certainty=UNCERTAIN,
        retry_policy=MANUAL_REVIEW,
        rule=f"{rule_prefix}:unmapped",
        source=OURS,
    )


def normalise_raw(raw_value: object) -> str:
    """A raw value with surrounding blanks removed ("" for anything not a string).

    Anything that is not a string (``None``, numbers) has no key and so projects
    as unmapped; the raw value itself is always stored untouched by the caller.
    """
    if not isinstance(raw_value, str):
        return ""
    return raw_value.strip()


# Both cancel spellings are accepted by every reader (seed: "Readers should
# accept both"): each vocabulary names the other spelling as an alias.
CANCEL_SPELLINGS: Final = ("cancelled", "canceled")


class Vocabulary(Mapping[str, V], Generic[V]):
    """One vocabulary, read tolerantly (DESIGN.md, "Spelling tolerance").

    Lookups ignore case and surrounding blanks, so ``Completed`` and
    `` completed`` find the ``completed`` row; ``key()`` gives the canonical
    spelling the table is written in (what rule names use). Iterating yields
    the canonical keys only, so the table reads exactly as DESIGN.md does.
    """

    def __init__(self, rows: Mapping[str, V] | Iterable[str]) -> None:
        if isinstance(rows, Mapping):
            self._rows: dict[str, V] = dict(rows)
        else:
            self._rows = {value: value for value in rows}  # type: ignore[misc]
        self._folded = {name.casefold(): name for name in self._rows}
        if len(self._folded) != len(self._rows):
            raise ValueError("two keys of one vocabulary differ only in case")

    def key(self, raw_value: object) -> str | None:
        """The canonical key for ``raw_value``, or None when no row knows it."""
        value = normalise_raw(raw_value)
        if not value:
            return None
        return self._folded.get(value.casefold())

    def lookup(self, raw_value: object) -> V | None:
        key = self.key(raw_value)
        return None if key is None else self._rows[key]

    def is_canonical(self, raw_value: object) -> bool:
        """Known and spelled exactly as the table writes it (no case or blank drift)."""
        return isinstance(raw_value, str) and raw_value in self._rows

    def __getitem__(self, key: str) -> V:
        return self._rows[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._rows)

    def __len__(self) -> int:
        return len(self._rows)

    def __contains__(self, raw_value: object) -> bool:
        return self.key(raw_value) is not None


def spelling_note(raw_value: object, canonical_key: str | None) -> str | None:
    """Why an accepted raw value is a producer note, or None when it is spelled as written.

    The projection audit lists these apart: accepted, not drift, not unmapped.
    """
    if canonical_key is None or not isinstance(raw_value, str) or raw_value == canonical_key:
        return None
    if raw_value.strip() != raw_value:
        return "surrounding blanks"
    return "letter case"


def enforce_uncertain_review(projection: Projection) -> Projection:
    """``uncertain`` always means ``manual_review``: never replay automatically."""
    if projection.outcome_certainty == UNCERTAIN and projection.retry_policy != MANUAL_REVIEW:
        return Projection(
            status=projection.status,
            reason=projection.reason,
            outcome_certainty=UNCERTAIN,
            retry_policy=MANUAL_REVIEW,
            rule=projection.rule,
            source=projection.source,
        )
    return projection
