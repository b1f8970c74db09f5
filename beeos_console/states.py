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

from dataclasses import dataclass
from typing import Final

PROJECTION_VERSION: Final = 1

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

_WORDS: Final = {
    RETRY_NONE: "no retry",
    SAFE_TO_RETRY: "safe to retry",
    MANUAL_REVIEW: "manual review",
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
        """The outcome in words, e.g. ``failed · timeout · uncertain · manual review``."""
        parts = [self.status]
        if self.reason:
            parts.append(self.reason)
        parts.append(self.outcome_certainty)
        parts.append(_WORDS.get(self.retry_policy, self.retry_policy))
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
    """The table key for a raw value: exact string, surrounding blanks removed.

    Anything that is not a string (``None``, numbers) has no key and so projects
    as unmapped; the raw value itself is always stored untouched by the caller.
    """
    if not isinstance(raw_value, str):
        return ""
    return raw_value.strip()
