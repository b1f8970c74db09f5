"""Task and message state projection, restated from the seeds and DESIGN.md.

Every expected value below is written out by hand from ``shared/DESIGN.md``
("State vocabularies and the product projection", "Cancellation spelling") and
``shared/seeds/001_*.txt``; nothing is computed from ``tasks.states``' own
tables. Where DESIGN.md is silent (e.g. the ``reason`` of a plain ``failed``),
the row pins the current choice and says so.

Each expected projection is the tuple
``(status, reason, outcome_certainty, retry_policy)``.
"""

from __future__ import annotations

import pytest

from tasks import states

# The answer for any raw value no table knows: stored raw, never guessed.
UNMAPPED = ("unmapped", "unmapped_state", "uncertain", "manual_review")


def as_tuple(projection) -> tuple[str, str, str, str]:
    return (
        projection.status,
        projection.reason,
        projection.outcome_certainty,
        projection.retry_policy,
    )


# --- Product / legacy producers (readers accept all, writers emit the five) ---
PRODUCT_CASES = [
    ("queued", ("queued", "", "certain", "none")),
    ("processing", ("processing", "", "certain", "none")),
    ("completed", ("completed", "", "certain", "none")),
    # DESIGN.md is silent on a bare product `failed`: pins reason "error", manual review.
    ("failed", ("failed", "error", "certain", "manual_review")),
    ("cancelled", ("cancelled", "", "certain", "none")),
    # legacy producers
    ("pending", ("queued", "", "certain", "none")),
    ("running", ("processing", "", "certain", "none")),
    ("succeeded", ("completed", "", "certain", "none")),
    ("timeout", ("failed", "timeout", "uncertain", "manual_review")),
    ("uncertain", ("failed", "outcome_unknown", "uncertain", "manual_review")),
    ("canceled", ("cancelled", "", "certain", "none")),
]

# --- OpenAPI /tasks wire (beeos_sdk TaskStatus) ---
OPENAPI_CASES = [
    ("queued", ("queued", "", "certain", "none")),
    ("running", ("processing", "", "certain", "none")),
    # Paused, waiting on the caller: still in progress (ours).
    ("input_required", ("processing", "input_required", "certain", "none")),
    ("auth_required", ("processing", "auth_required", "certain", "none")),
    ("completed", ("completed", "", "certain", "none")),
    ("failed", ("failed", "error", "certain", "manual_review")),
    ("canceled", ("cancelled", "", "certain", "none")),
    # Readers accept the other spelling too.
    ("cancelled", ("cancelled", "", "certain", "none")),
    ("timeout", ("failed", "timeout", "uncertain", "manual_review")),
    ("rejected", ("failed", "rejected", "certain", "safe_to_retry")),
]

# --- A2A: JSON spellings, v1 enum names, BeeOS internal values, both cancel spellings ---
A2A_CASES = [
    # JSON wire spellings
    ("submitted", ("queued", "", "certain", "none")),
    ("working", ("processing", "", "certain", "none")),
    ("input-required", ("processing", "input_required", "certain", "none")),
    ("auth-required", ("processing", "auth_required", "certain", "none")),
    ("completed", ("completed", "", "certain", "none")),
    ("failed", ("failed", "error", "certain", "manual_review")),
    ("canceled", ("cancelled", "", "certain", "none")),
    ("rejected", ("failed", "rejected", "certain", "safe_to_retry")),
    # v1 protobuf enum names
    ("TASK_STATE_SUBMITTED", ("queued", "", "certain", "none")),
    ("TASK_STATE_WORKING", ("processing", "", "certain", "none")),
    ("TASK_STATE_INPUT_REQUIRED", ("processing", "input_required", "certain", "none")),
    ("TASK_STATE_AUTH_REQUIRED", ("processing", "auth_required", "certain", "none")),
    ("TASK_STATE_COMPLETED", ("completed", "", "certain", "none")),
    ("TASK_STATE_FAILED", ("failed", "error", "certain", "manual_review")),
    ("TASK_STATE_CANCELED", ("cancelled", "", "certain", "none")),
    ("TASK_STATE_REJECTED", ("failed", "rejected", "certain", "safe_to_retry")),
    # BeeOS internal values (wire `submitted` and `failed`)
    ("delivered", ("queued", "", "certain", "none")),
    ("timeout", ("failed", "timeout", "uncertain", "manual_review")),
    # Readers accept the British spelling too, in both renderings.
    ("cancelled", ("cancelled", "", "certain", "none")),
    ("TASK_STATE_CANCELLED", ("cancelled", "", "certain", "none")),
]

TASK_CASES = [
    *[("product", raw, expected) for raw, expected in PRODUCT_CASES],
    *[("openapi", raw, expected) for raw, expected in OPENAPI_CASES],
    *[("a2a", raw, expected) for raw, expected in A2A_CASES],
]
TASK_IDS = [f"{protocol}:{raw}" for protocol, raw, _ in TASK_CASES]


@pytest.mark.parametrize(("protocol", "raw", "expected"), TASK_CASES, ids=TASK_IDS)
def test_task_projection(protocol, raw, expected):
    assert as_tuple(states.project(protocol, raw)) == expected


@pytest.mark.parametrize(("protocol", "raw", "expected"), TASK_CASES, ids=TASK_IDS)
def test_task_projection_ignores_surrounding_blanks(protocol, raw, expected):
    assert as_tuple(states.project(protocol, f"  {raw}\n")) == expected


@pytest.mark.parametrize(
    ("protocol", "cases"),
    [("product", PRODUCT_CASES), ("openapi", OPENAPI_CASES), ("a2a", A2A_CASES)],
)
def test_every_table_row_is_restated_here(protocol, cases):
    """A row added to a module table must be restated above (and vice versa)."""
    assert set(states.known_values(protocol)) == {raw for raw, _ in cases}


# --- Values no table knows: unmapped, never an exception ---
JUNK_VALUES = [
    None,
    0,
    1,
    3.5,
    True,
    "",
    "   ",
    "bogus",
    b"queued",
    ["queued"],
    {"state": "queued"},
]

UNMAPPED_CASES = [
    *[(protocol, raw) for protocol in ("product", "openapi", "a2a") for raw in JUNK_VALUES],
    # A2A "no state" values (seed: protocol-known, but they say nothing).
    ("a2a", "TASK_STATE_UNSPECIFIED"),
    ("a2a", "unknown"),
    # Another protocol's spelling is not guessed at.
    ("openapi", "input-required"),
    ("openapi", "submitted"),
    ("openapi", "delivered"),
    ("openapi", "TASK_STATE_CANCELED"),
    ("openapi", "pending"),
    ("a2a", "input_required"),
    ("a2a", "queued"),
    ("a2a", "running"),
    ("product", "rejected"),
    ("product", "input_required"),
    ("product", "TASK_STATE_COMPLETED"),
    # Unknown protocols
    ("acp", "queued"),
    ("", "queued"),
    (None, "queued"),
]


@pytest.mark.parametrize(
    ("protocol", "raw"), UNMAPPED_CASES, ids=[f"{p}:{r!r}" for p, r in UNMAPPED_CASES]
)
def test_unknown_values_are_unmapped(protocol, raw):
    projection = states.project(protocol, raw)
    assert as_tuple(projection) == UNMAPPED
    assert projection.is_unmapped
    assert not states.is_known(protocol, raw)
    assert not states.is_terminal(protocol, raw)
    assert not states.is_cancellable(protocol, raw)


# --- Message envelope: state + stop_reason evidence (one message row) ---
STOP_REASONS = [
    "end_turn",
    "max_tokens",
    "tool_use",
    "user_stop",
    "timeout",
    "error",
    "refused",
    "content_filter",
    "agent_lost",
]

MESSAGE_CASES = [
    ("streaming", None, ("processing", "", "certain", "none")),
    ("completed", None, ("completed", "", "certain", "none")),
    ("completed", "end_turn", ("completed", "", "certain", "none")),
    ("completed", "max_tokens", ("completed", "", "certain", "none")),
    # failed: reason = stop_reason ("error" when there is none).
    ("failed", None, ("failed", "error", "certain", "manual_review")),
    ("failed", "", ("failed", "error", "certain", "manual_review")),
    *[
        ("failed", stop, ("failed", stop, "certain", "manual_review"))
        for stop in STOP_REASONS
        if stop not in ("timeout", "agent_lost")
    ],
    # A reply that died mid-flight may already have acted (ours).
    ("failed", "timeout", ("failed", "timeout", "uncertain", "manual_review")),
    ("failed", "agent_lost", ("failed", "agent_lost", "uncertain", "manual_review")),
    # refused -> failed/refused, whatever the stop_reason.
    ("refused", None, ("failed", "refused", "certain", "none")),
    ("refused", "refused", ("failed", "refused", "certain", "none")),
    ("refused", "content_filter", ("failed", "refused", "certain", "none")),
    # cancelled: a clean stop by the user, a timeout is not.
    ("cancelled", None, ("cancelled", "", "certain", "none")),
    ("cancelled", "user_stop", ("cancelled", "user_stop", "certain", "none")),
    ("cancelled", "timeout", ("failed", "timeout", "uncertain", "manual_review")),
    ("cancelled", "error", ("cancelled", "", "certain", "none")),
    # The American spelling is read the same way.
    ("canceled", None, ("cancelled", "", "certain", "none")),
    ("canceled", "user_stop", ("cancelled", "user_stop", "certain", "none")),
    ("canceled", "timeout", ("failed", "timeout", "uncertain", "manual_review")),
    # Unknown message states
    ("delivered", None, UNMAPPED),
    ("queued", "end_turn", UNMAPPED),
    ("", None, UNMAPPED),
    (None, "timeout", UNMAPPED),
    (7, None, UNMAPPED),
]
MESSAGE_IDS = [f"{state!r}+{stop!r}" for state, stop, _ in MESSAGE_CASES]


@pytest.mark.parametrize(("state", "stop_reason", "expected"), MESSAGE_CASES, ids=MESSAGE_IDS)
def test_message_projection(state, stop_reason, expected):
    assert as_tuple(states.project("message", state, stop_reason=stop_reason)) == expected
    # The direct entry point agrees with project("message", ...).
    assert as_tuple(states.project_message(state, stop_reason=stop_reason)) == expected


def test_message_table_rows_are_restated_here():
    assert set(states.known_values("message")) == {
        "streaming",
        "completed",
        "failed",
        "refused",
        "cancelled",
        "canceled",
    }


@pytest.mark.parametrize("protocol", ["product", "openapi", "a2a"])
def test_tasks_ignore_stop_reason_evidence(protocol):
    """stop_reason is message evidence only: a task state is not changed by it."""
    assert as_tuple(states.project(protocol, "completed", stop_reason="timeout")) == (
        "completed",
        "",
        "certain",
        "none",
    )


# --- Predicates: terminal and cancellable ---
# Terminal product statuses are completed, failed and cancelled; a task may be
# cancelled while queued or processing (paused included).
PREDICATE_CASES = [
    (protocol, raw, expected[0] in ("completed", "failed", "cancelled"))
    for protocol, raw, expected in TASK_CASES
]


@pytest.mark.parametrize(("protocol", "raw", "terminal"), PREDICATE_CASES, ids=TASK_IDS)
def test_terminal_and_cancellable(protocol, raw, terminal):
    assert states.is_terminal(protocol, raw) is terminal
    assert states.is_cancellable(protocol, raw) is (not terminal)
    assert states.is_known(protocol, raw)


@pytest.mark.parametrize(
    ("protocol", "raw"),
    [
        ("openapi", "input_required"),
        ("openapi", "auth_required"),
        ("a2a", "input-required"),
        ("a2a", "TASK_STATE_AUTH_REQUIRED"),
    ],
)
def test_paused_tasks_are_cancellable_and_not_terminal(protocol, raw):
    assert states.is_cancellable(protocol, raw)
    assert not states.is_terminal(protocol, raw)


@pytest.mark.parametrize(
    ("state", "terminal"),
    [
        ("streaming", False),
        ("completed", True),
        ("failed", True),
        ("refused", True),
        ("cancelled", True),
        ("canceled", True),
    ],
)
def test_message_terminal(state, terminal):
    assert states.is_terminal("message", state) is terminal


def test_terminal_wire_vocabularies():
    # seed / beeos_sdk TaskStatus docstring: terminal OpenAPI values.
    assert states.OPENAPI_TERMINAL_VALUES == {
        "completed",
        "failed",
        "canceled",
        "timeout",
        "rejected",
    }
    assert states.A2A_TERMINAL_JSON == {"completed", "failed", "canceled", "rejected", "timeout"}
    assert states.MESSAGE_TERMINAL_STATES == {"completed", "failed", "refused", "cancelled"}


# --- Cancellation spelling: readers accept both, writers emit their own ---
CANCEL_SPELLING_CASES = [
    ("openapi", None, "canceled"),
    ("openapi", "TASK_STATE_WORKING", "canceled"),
    ("a2a", None, "canceled"),
    ("a2a", "working", "canceled"),
    ("a2a", "cancelled", "canceled"),
    ("a2a", "TASK_STATE_WORKING", "TASK_STATE_CANCELED"),
    ("a2a", " TASK_STATE_SUBMITTED ", "TASK_STATE_CANCELED"),
    ("a2a", "TASK_STATE_CANCELLED", "TASK_STATE_CANCELED"),
    ("product", None, "cancelled"),
    ("product", "canceled", "cancelled"),
    ("message", None, "cancelled"),
    ("message", "canceled", "cancelled"),
]


@pytest.mark.parametrize(("protocol", "like", "expected"), CANCEL_SPELLING_CASES)
def test_cancel_spelling_writers(protocol, like, expected):
    written = states.cancel_spelling(protocol, like=like)
    assert written == expected
    # What a writer emits, its own reader takes as cancelled, and not as foreign.
    assert states.project(protocol, written).status == "cancelled"
    assert not states.is_foreign_cancel_spelling(protocol, written)


FOREIGN_CASES = [
    ("openapi", "canceled", False),
    ("openapi", "cancelled", True),
    ("a2a", "canceled", False),
    ("a2a", "TASK_STATE_CANCELED", False),
    ("a2a", "cancelled", True),
    ("a2a", "TASK_STATE_CANCELLED", True),
    ("a2a", " cancelled ", True),
    ("product", "cancelled", False),
    ("product", "canceled", True),
    ("message", "cancelled", False),
    ("message", "canceled", True),
    # Not a cancel value at all
    ("openapi", "queued", False),
    ("a2a", "failed", False),
    ("product", None, False),
    ("message", 5, False),
]


@pytest.mark.parametrize(("protocol", "raw", "foreign"), FOREIGN_CASES)
def test_is_foreign_cancel_spelling(protocol, raw, foreign):
    assert states.is_foreign_cancel_spelling(protocol, raw) is foreign


CANCEL_LIKE = ["canceled", "cancelled", "TASK_STATE_CANCELED", "TASK_STATE_CANCELLED"]
FOREIGN_ACCEPTED_CASES = [
    pytest.param(protocol, raw, id=f"{protocol}:{raw}")
    for protocol in ("openapi", "a2a", "product", "message")
    for raw in CANCEL_LIKE
]


@pytest.mark.parametrize(("protocol", "raw"), FOREIGN_ACCEPTED_CASES)
def test_a_foreign_cancel_spelling_is_still_read_as_cancelled(protocol, raw):
    """ "Accepted, but not what this protocol's writers emit": accepted must hold."""
    if states.is_foreign_cancel_spelling(protocol, raw):
        assert states.project(protocol, raw).status == "cancelled"


# --- A2A JSON wire rendering of stored values ---
A2A_WIRE_CASES = [
    ("submitted", "submitted"),
    ("delivered", "submitted"),
    ("working", "working"),
    ("input-required", "input-required"),
    ("auth-required", "auth-required"),
    ("completed", "completed"),
    ("failed", "failed"),
    ("timeout", "failed"),
    ("canceled", "canceled"),
    ("cancelled", "canceled"),
    ("rejected", "rejected"),
    ("TASK_STATE_SUBMITTED", "submitted"),
    ("TASK_STATE_WORKING", "working"),
    ("TASK_STATE_INPUT_REQUIRED", "input-required"),
    ("TASK_STATE_AUTH_REQUIRED", "auth-required"),
    ("TASK_STATE_COMPLETED", "completed"),
    ("TASK_STATE_FAILED", "failed"),
    ("TASK_STATE_CANCELED", "canceled"),
    ("TASK_STATE_CANCELLED", "canceled"),
    ("TASK_STATE_REJECTED", "rejected"),
]


@pytest.mark.parametrize(("raw", "wire"), A2A_WIRE_CASES)
def test_a2a_wire_json(raw, wire):
    assert states.a2a_wire_json(raw) == wire


# --- What product writers emit: only the five (or unmapped) ---
@pytest.mark.parametrize(
    ("protocol", "raw", "written"),
    [
        ("product", "pending", "queued"),
        ("product", "running", "processing"),
        ("product", "succeeded", "completed"),
        ("product", "timeout", "failed"),
        ("product", "uncertain", "failed"),
        ("product", "canceled", "cancelled"),
        ("openapi", "canceled", "cancelled"),
        ("openapi", "rejected", "failed"),
        ("a2a", "TASK_STATE_CANCELED", "cancelled"),
        ("a2a", "delivered", "queued"),
        ("a2a", "TASK_STATE_UNSPECIFIED", "unmapped"),
    ],
)
def test_product_write_value(protocol, raw, written):
    assert states.product_write_value(protocol, raw) == written


@pytest.mark.parametrize(("protocol", "raw", "expected"), TASK_CASES, ids=TASK_IDS)
def test_product_writers_emit_only_the_five(protocol, raw, expected):
    assert states.product_write_value(protocol, raw) in {
        "queued",
        "processing",
        "completed",
        "failed",
        "cancelled",
    }


# --- explain(): the rule in words, shown on every detail page ---
EXPLAIN_CASES = [
    ("openapi", "timeout", {}, "OpenAPI `timeout` → failed · timeout · uncertain · manual_review"),
    ("openapi", "rejected", {}, "OpenAPI `rejected` → failed · rejected · certain · safe_to_retry"),
    ("openapi", "running", {}, "OpenAPI `running` → processing · certain · none"),
    ("a2a", "TASK_STATE_WORKING", {}, "A2A `TASK_STATE_WORKING` → processing · certain · none"),
    ("product", "canceled", {}, "Product `canceled` → cancelled · certain · none"),
    (
        "message",
        "failed",
        {"stop_reason": "agent_lost"},
        "Message `failed` → failed · agent_lost · uncertain · manual_review",
    ),
    ("a2a", None, {}, "A2A `None` → unmapped · unmapped_state · uncertain · manual_review"),
]


@pytest.mark.parametrize(("protocol", "raw", "evidence", "text"), EXPLAIN_CASES)
def test_explain(protocol, raw, evidence, text):
    projection = states.project(protocol, raw, **evidence)
    explained = states.explain(protocol, raw, projection)
    assert text in explained
    # The rule that decided it is named too.
    assert projection.rule in explained


@pytest.mark.parametrize(
    ("protocol", "raw", "source_words"),
    [
        ("product", "timeout", "(seed;"),
        ("product", "uncertain", "(our rule;"),
        ("openapi", "input_required", "(our rule;"),
        ("openapi", "queued", "(seed;"),
    ],
)
def test_explain_says_where_the_rule_comes_from(protocol, raw, source_words):
    assert source_words in states.explain(protocol, raw, states.project(protocol, raw))


# --- Invariant: uncertain always means manual review, never an automatic replay ---
def _every_known_task_projection():
    for protocol in ("product", "openapi", "a2a"):
        for raw in states.known_values(protocol):
            yield f"{protocol}:{raw}", states.project(protocol, raw)
    for state in states.known_values("message"):
        for stop in [None, *STOP_REASONS, "bogus"]:
            yield f"message:{state}+{stop}", states.project("message", state, stop_reason=stop)
    for raw in JUNK_VALUES:
        yield f"unmapped:{raw!r}", states.project("a2a", raw)


def test_uncertain_always_means_manual_review():
    offenders = [
        name
        for name, projection in _every_known_task_projection()
        if projection.outcome_certainty == "uncertain"
        and projection.retry_policy != "manual_review"
    ]
    assert offenders == []


def test_projection_values_stay_in_their_vocabularies():
    for name, projection in _every_known_task_projection():
        assert projection.status in {
            "queued",
            "processing",
            "completed",
            "failed",
            "cancelled",
            "unmapped",
        }, name
        assert projection.outcome_certainty in {"certain", "uncertain"}, name
        assert projection.retry_policy in {"none", "safe_to_retry", "manual_review"}, name


@pytest.mark.parametrize("protocol", [None, 3, ["openapi"], {"p": 1}, "ftp"])
def test_a_protocol_nobody_knows_projects_unmapped_without_raising(protocol):
    assert states.project(protocol, "queued").status == "unmapped"
