"""Runtime operation display projection and cancel rules, restated from DESIGN.md.

Expected values are written out by hand from ``shared/DESIGN.md`` ("Runtime
operation" in "State vocabularies and the product projection", and "Cancel
rules"); nothing is computed from ``operations.states``' own tables. The raw
values always stay beside the projection; these tests only pin the display.

Each expected projection is the tuple
``(status, reason, outcome_certainty, retry_policy)``.
"""

from __future__ import annotations

import pytest

from operations import states

UNMAPPED = ("unmapped", "unmapped_state", "uncertain", "manual_review")


def as_tuple(projection) -> tuple[str, str, str, str]:
    return (
        projection.status,
        projection.reason,
        projection.outcome_certainty,
        projection.retry_policy,
    )


# --- Every raw status, without error evidence ---
STATUS_CASES = [
    ("queued", ("queued", "", "certain", "none")),
    ("running", ("processing", "", "certain", "none")),
    # The effect happened; the platform's projection is still catching up.
    ("runtime_committed", ("processing", "runtime_committed", "certain", "none")),
    ("projection_pending", ("processing", "projection_pending", "certain", "none")),
    # The effect did happen, but projection cannot converge: a person must look.
    ("projection_blocked", ("failed", "projection_blocked", "certain", "manual_review")),
    ("succeeded", ("completed", "", "certain", "none")),
    # No error code and no retryMode: reason "error", manual review.
    ("failed", ("failed", "error", "certain", "manual_review")),
    ("cancelled", ("cancelled", "", "certain", "none")),
    # Readers accept the American spelling too.
    ("canceled", ("cancelled", "", "certain", "none")),
    ("expired", ("failed", "expired", "certain", "manual_review")),
    ("outcome_unknown", ("failed", "outcome_unknown", "uncertain", "manual_review")),
]


@pytest.mark.parametrize(("raw", "expected"), STATUS_CASES)
def test_status_projection(raw, expected):
    assert as_tuple(states.project(raw)) == expected
    assert as_tuple(states.project(f" {raw} ")) == expected


def test_every_table_row_is_restated_here():
    assert set(states.TABLE) == {raw for raw, _ in STATUS_CASES}


def test_raw_vocabularies_match_design():
    assert states.STATUSES == (
        "queued",
        "running",
        "runtime_committed",
        "projection_pending",
        "projection_blocked",
        "succeeded",
        "failed",
        "cancelled",
        "expired",
        "outcome_unknown",
    )
    assert set(states.EFFECT_STATES) == {
        "queued",
        "running",
        "committed",
        "failed",
        "cancelled",
        "expired",
        "outcome_unknown",
    }
    assert set(states.PROJECTION_STATES) == {"not_applicable", "pending", "synced", "blocked"}
    assert set(states.RETRY_MODES) == {"none", "resume", "resubmit"}


# --- failed: reason = error code, retry policy from retryMode ---
FAILED_CASES = [
    ("INSTANCE_OFFLINE", "resubmit", ("failed", "INSTANCE_OFFLINE", "certain", "safe_to_retry")),
    (
        "RUNTIME_EXECUTION_FAILED",
        "resume",
        ("failed", "RUNTIME_EXECUTION_FAILED", "certain", "safe_to_retry"),
    ),
    ("METHOD_NOT_SUPPORTED", "none", ("failed", "METHOD_NOT_SUPPORTED", "certain", "none")),
    # retryMode absent: nobody said retry is safe.
    ("INVALID_INVOCATION", None, ("failed", "INVALID_INVOCATION", "certain", "manual_review")),
    ("INVALID_INVOCATION", "", ("failed", "INVALID_INVOCATION", "certain", "manual_review")),
    # retryMode unknown: never guessed.
    ("UNAUTHORIZED_TARGET", "retry", ("failed", "UNAUTHORIZED_TARGET", "certain", "manual_review")),
    ("UNAUTHORIZED_TARGET", 3, ("failed", "UNAUTHORIZED_TARGET", "certain", "manual_review")),
    # No error code: reason "error", retry still from retryMode.
    (None, "resubmit", ("failed", "error", "certain", "safe_to_retry")),
    ("", "none", ("failed", "error", "certain", "none")),
    (None, None, ("failed", "error", "certain", "manual_review")),
    # Blanks around wire values are not significant.
    (" INSTANCE_OFFLINE ", " resume ", ("failed", "INSTANCE_OFFLINE", "certain", "safe_to_retry")),
]


@pytest.mark.parametrize(("code", "retry_mode", "expected"), FAILED_CASES)
def test_failed_reason_is_the_error_code(code, retry_mode, expected):
    assert as_tuple(states.project("failed", error_code=code, retry_mode=retry_mode)) == expected


@pytest.mark.parametrize("code", states.ERROR_CODES)
@pytest.mark.parametrize(
    ("retry_mode", "policy"),
    [
        ("resubmit", "safe_to_retry"),
        ("resume", "safe_to_retry"),
        ("none", "none"),
        (None, "manual_review"),
    ],
)
def test_every_error_code_becomes_the_reason(code, retry_mode, policy):
    projection = states.project("failed", error_code=code, retry_mode=retry_mode)
    if code == "OUTCOME_UNKNOWN":
        # The code says the effect may have happened: never certain, never a replay.
        assert as_tuple(projection) == ("failed", code, "uncertain", "manual_review")
    else:
        assert as_tuple(projection) == ("failed", code, "certain", policy)


# --- expired: a certain failure, retry policy from retryMode; reason stays "expired" ---
EXPIRED_CASES = [
    (None, None, ("failed", "expired", "certain", "manual_review")),
    (None, "resubmit", ("failed", "expired", "certain", "safe_to_retry")),
    (None, "resume", ("failed", "expired", "certain", "safe_to_retry")),
    (None, "none", ("failed", "expired", "certain", "none")),
    ("COMMAND_EXPIRED", "none", ("failed", "expired", "certain", "none")),
]


@pytest.mark.parametrize(("code", "retry_mode", "expected"), EXPIRED_CASES)
def test_expired(code, retry_mode, expected):
    assert as_tuple(states.project("expired", error_code=code, retry_mode=retry_mode)) == expected


# --- Evidence that must NOT change the display value ---
EVIDENCE_CASES = [
    # Replay is unsafe whatever retryMode says.
    (
        "outcome_unknown",
        {"error_code": "OUTCOME_UNKNOWN", "retry_mode": "resubmit"},
        ("failed", "outcome_unknown", "uncertain", "manual_review"),
    ),
    (
        "outcome_unknown",
        {"retry_mode": "none"},
        ("failed", "outcome_unknown", "uncertain", "manual_review"),
    ),
    # The effect happened: still a person's call.
    (
        "projection_blocked",
        {"error_code": "PROJECTION_BLOCKED", "retry_mode": "resubmit"},
        ("failed", "projection_blocked", "certain", "manual_review"),
    ),
    (
        "succeeded",
        {"error_code": "INSTANCE_OFFLINE", "retry_mode": "none"},
        ("completed", "", "certain", "none"),
    ),
    (
        "cancelled",
        {"error_code": "OPERATION_CANCELLED", "retry_mode": "resubmit"},
        ("cancelled", "", "certain", "none"),
    ),
    # effectState and projection state stay beside the display value.
    (
        "running",
        {"effect_state": "committed", "projection_state": "blocked"},
        ("processing", "", "certain", "none"),
    ),
    (
        "projection_pending",
        {"effect_state": "committed", "projection_state": "pending"},
        ("processing", "projection_pending", "certain", "none"),
    ),
]


@pytest.mark.parametrize(("raw", "evidence", "expected"), EVIDENCE_CASES)
def test_evidence_does_not_override_the_status(raw, evidence, expected):
    assert as_tuple(states.project(raw, **evidence)) == expected


# --- Unknown status: unmapped, never an exception ---
UNKNOWN_STATUSES = [
    None,
    "",
    "  ",
    0,
    1.5,
    True,
    b"queued",
    ["queued"],
    {"status": "queued"},
    "bogus",
    "pending",
    "completed",
    "processing",
    "runtime-committed",
    "committed",
    "synced",
    "TASK_STATE_CANCELED",
]


@pytest.mark.parametrize("raw", UNKNOWN_STATUSES, ids=repr)
def test_unknown_status_is_unmapped(raw):
    projection = states.project(raw, error_code="INSTANCE_OFFLINE", retry_mode="resubmit")
    assert as_tuple(projection) == UNMAPPED
    assert not states.is_known(raw)
    assert not states.is_cancellable(raw)
    assert not states.is_terminal(raw)


# --- Predicates and cancel rules ---
PREDICATE_CASES = [
    # (status, terminal, cancellable)
    ("queued", False, True),
    ("running", False, True),
    ("runtime_committed", False, False),
    ("projection_pending", False, False),
    ("projection_blocked", True, False),
    ("succeeded", True, False),
    ("failed", True, False),
    ("cancelled", True, False),
    ("canceled", True, False),
    ("expired", True, False),
    ("outcome_unknown", True, False),
]


@pytest.mark.parametrize(("raw", "terminal", "cancellable"), PREDICATE_CASES)
def test_terminal_and_cancellable(raw, terminal, cancellable):
    assert states.is_terminal(raw) is terminal
    assert states.is_cancellable(raw) is cancellable
    assert states.is_known(raw)
    # A refusal exactly when cancel is not allowed.
    assert (states.cancel_refusal(raw) is None) is cancellable


REFUSAL_CASES = [
    # From runtime_committed on, the effect has happened: refuse and say so.
    ("runtime_committed", "already happened"),
    ("projection_pending", "already happened"),
    ("projection_blocked", "already happened"),
    ("succeeded", "already happened"),
    # The platform cannot prove what happened.
    ("outcome_unknown", "replay is unsafe"),
    # Otherwise ended.
    ("failed", "already ended"),
    ("cancelled", "already ended"),
    ("canceled", "already ended"),
    ("expired", "already ended"),
    # Unknown: refuse, we cannot tell whether cancelling is safe.
    ("bogus", "cannot tell"),
    (None, "cannot tell"),
    ("", "cannot tell"),
]


@pytest.mark.parametrize(("raw", "words"), REFUSAL_CASES)
def test_cancel_refusal_wording(raw, words):
    refusal = states.cancel_refusal(raw)
    assert refusal is not None
    assert words in refusal


@pytest.mark.parametrize("raw", ["queued", "running", " queued "])
def test_queued_and_running_may_be_cancelled(raw):
    assert states.cancel_refusal(raw) is None
    assert states.is_cancellable(raw)


def test_operations_write_the_british_cancel_spelling():
    assert states.cancel_spelling() == "cancelled"
    assert states.project(states.cancel_spelling()).status == "cancelled"


# --- Invariant: uncertain always means manual review ---
def test_uncertain_always_means_manual_review():
    offenders = []
    for raw in [*states.TABLE, *UNKNOWN_STATUSES]:
        for code in (None, "OUTCOME_UNKNOWN", "INSTANCE_OFFLINE"):
            for mode in (None, *states.RETRY_MODES, "bogus"):
                projection = states.project(raw, error_code=code, retry_mode=mode)
                if (
                    projection.outcome_certainty == "uncertain"
                    and projection.retry_policy != "manual_review"
                ):
                    offenders.append((raw, code, mode))
    assert offenders == []


def test_retry_policy_by_mode_covers_every_retry_mode():
    assert states.RETRY_POLICY_BY_MODE == {
        "resubmit": "safe_to_retry",
        "resume": "safe_to_retry",
        "none": "none",
    }
