"""Runtime operation vocabularies and their display projection: pure Python.

A runtime operation is a side effect on an instance (model switch, session
control, MCP config, agent lifecycle). Its raw ``status``, ``effectState``,
projection ``state``, error ``code`` and ``retryMode`` always stay visible; the
display projection (DESIGN.md, ours) sits beside them and never replaces them.
The vocabularies are checked against ``beeos_sdk``'s snapshot validators and
``contracts/runtime-error-codes-v4.json`` in the tests.
"""

from __future__ import annotations

from typing import Final

from beeos_console.mirror.said import Said, gettext_noop
from beeos_console.mirror.states import (
    CANCELLED,
    CERTAIN,
    COMPLETED,
    FAILED,
    MANUAL_REVIEW,
    OURS,
    PROCESSING,
    QUEUED,
    RETRY_NONE,
    SAFE_TO_RETRY,
    UNCERTAIN,
    Projection,
    Row,
    Vocabulary,
    enforce_uncertain_review,
    spelling_note,
    unmapped,
)

RULE_PREFIX: Final = "operation"

# Raw operation status (seed).
STATUSES: Final = (
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
# From here on the runtime effect has happened (or may have): never cancel.
EFFECT_COMMITTED_STATUSES: Final = frozenset(
    {"runtime_committed", "projection_pending", "projection_blocked", "succeeded"}
)
CANCELLABLE_STATUSES: Final = frozenset({"queued", "running"})
# projection_blocked ends the operation's own lifecycle (it is an event
# `outcome`), though the platform may later converge it: ours.
TERMINAL_STATUSES: Final = frozenset(
    {"succeeded", "failed", "cancelled", "expired", "outcome_unknown", "projection_blocked"}
)

EFFECT_STATES: Final = (
    "queued",
    "running",
    "committed",
    "failed",
    "cancelled",
    "expired",
    "outcome_unknown",
)
# effectState as carried inside an error object.
ERROR_EFFECT_STATES: Final = ("failed", "cancelled", "expired", "outcome_unknown", "committed")
PROJECTION_STATES: Final = ("not_applicable", "pending", "synced", "blocked")
RETRY_MODES: Final = ("none", "resume", "resubmit")
TARGET_SCOPES: Final = ("instance", "agent", "conversation")
CAPABILITIES: Final = (
    "agents.lifecycle",
    "skills",
    "models",
    "cron",
    "mcp",
    "conversation.control",
)
TRANSPORTS: Final = ("service",)
EVENT_TYPES: Final = (
    "runtime_operation_started",
    "runtime_operation_progress",
    "runtime_effect_committed",
    "runtime_projection_pending",
    "runtime_projection_synced",
    "runtime_projection_blocked",
    "runtime_operation_cancel_requested",
    "runtime_rpc_response",
)
EVENT_OUTCOMES: Final = (
    "succeeded",
    "failed",
    "cancelled",
    "expired",
    "outcome_unknown",
    "projection_blocked",
)
# contracts/runtime-error-codes-v4.json
ERROR_CODES: Final = (
    "AGENT_DEFAULT_MODEL_NOT_CONFIGURED",
    "COMMAND_EXPIRED",
    "CONTRACT_VERSION_MISMATCH",
    "CONVERSATION_CLEARING",
    "HISTORY_GENERATION_MISMATCH",
    "IDEMPOTENCY_CONFLICT",
    "INSTANCE_EPOCH_MISMATCH",
    "INSTANCE_OFFLINE",
    "INVALID_EXECUTION_GRANT",
    "INVALID_INVOCATION",
    "METHOD_NOT_SUPPORTED",
    "OPERATION_CANCELLED",
    "OPERATION_NOT_CANCELLABLE",
    "OPERATION_NOT_FOUND",
    "OUTCOME_UNKNOWN",
    "PROJECTION_BLOCKED",
    "PROJECTION_PENDING",
    "RUNTIME_EXECUTION_FAILED",
    "UNAUTHORIZED_PUBLISHER",
    "UNAUTHORIZED_TARGET",
    "USE_AGENTS_API",
)
# Which capability a method belongs to (beeos_sdk ServiceRuntimeMethod).
METHOD_CAPABILITIES: Final = {
    "agent/create": "agents.lifecycle",
    "agent/update": "agents.lifecycle",
    "agent/delete": "agents.lifecycle",
    "agent/applyTemplate": "agents.lifecycle",
    "skills/list": "skills",
    "skills/install": "skills",
    "skills/uninstall": "skills",
    "skills/update": "skills",
    "models/list": "models",
    "cron/list": "cron",
    "cron/status": "cron",
    "cron/add": "cron",
    "cron/update": "cron",
    "cron/remove": "cron",
    "cron/run": "cron",
    "cron/runs": "cron",
    "mcp/list": "mcp",
    "mcp/prepare": "mcp",
    "mcp/set": "mcp",
    "mcp/unset": "mcp",
    "session/set_mode": "conversation.control",
    "session/clear": "conversation.control",
    "session/set_model": "conversation.control",
    "session/cancel": "conversation.control",
}
# beeos_sdk's ServiceRuntimeMethod, value for value and in its order (the demo draws
# from it): tests/test_sdk_vocabularies.py fails when the SDK changes one. Written out,
# not read from the enum: processes start without the SDK (beeos_console/upstream/sdk.py).
METHODS: Final = (
    "session/set_mode",
    "agent/create",
    "agent/update",
    "agent/delete",
    "agent/applyTemplate",
    "skills/list",
    "skills/install",
    "skills/uninstall",
    "skills/update",
    "models/list",
    "cron/list",
    "cron/status",
    "cron/add",
    "cron/update",
    "cron/remove",
    "cron/run",
    "cron/runs",
    "mcp/list",
    "mcp/prepare",
    "mcp/set",
    "mcp/unset",
    "session/clear",
    "session/set_model",
    "session/cancel",
)

# Certain failures follow retryMode (DESIGN.md, ours).
RETRY_POLICY_BY_MODE: Final = {
    "resubmit": SAFE_TO_RETRY,
    "resume": SAFE_TO_RETRY,
    "none": RETRY_NONE,
}
# Tolerant readers (DESIGN.md, "Spelling tolerance"): any case, both cancel spellings.
EFFECT_STATE_VOCABULARY: Final[Vocabulary[str]] = Vocabulary(
    {**{v: v for v in EFFECT_STATES}, "canceled": "cancelled"}
)
RETRY_MODE_VOCABULARY: Final[Vocabulary[str]] = Vocabulary(RETRY_MODES)
PROJECTION_STATE_VOCABULARY: Final[Vocabulary[str]] = Vocabulary(PROJECTION_STATES)
ERROR_CODE_VOCABULARY: Final[Vocabulary[str]] = Vocabulary(ERROR_CODES)
# Statuses whose effect has ended without certainty of its own: effectState
# then decides whether it happened (DESIGN.md, Runtime operation).
EFFECT_DECIDES: Final = frozenset({"failed", "expired", "cancelled"})

TABLE: Final[Vocabulary[Row]] = Vocabulary(
    {
        "queued": Row(QUEUED, source=OURS),
        "running": Row(PROCESSING, source=OURS),
        "runtime_committed": Row(PROCESSING, "runtime_committed", source=OURS),
        "projection_pending": Row(PROCESSING, "projection_pending", source=OURS),
        "succeeded": Row(COMPLETED, source=OURS),
        "cancelled": Row(CANCELLED, source=OURS),
        # The American spelling from a producer that got it wrong: accepted.
        "canceled": Row(CANCELLED, source=OURS),
        # reason = error code, retry policy from retryMode: filled in by project().
        "failed": Row(FAILED, "error", CERTAIN, MANUAL_REVIEW, source=OURS),
        "expired": Row(FAILED, "expired", CERTAIN, MANUAL_REVIEW, source=OURS),
        "outcome_unknown": Row(FAILED, "outcome_unknown", UNCERTAIN, MANUAL_REVIEW, source=OURS),
        # The effect did happen; projection cannot converge: a person must look.
        "projection_blocked": Row(
            FAILED, "projection_blocked", CERTAIN, MANUAL_REVIEW, source=OURS
        ),
    }
)


def effect_reading(effect_state: object, error_effect_state: object = None) -> str:
    """What the effectState values say, most cautious first.

    ``unknown`` (outcome_unknown, or a value no table knows), ``committed``, or
    ``clear`` (absent, queued, running, failed, cancelled, expired). The error
    object's own effectState counts as much as the top-level one.
    """
    readings = set()
    for value in (effect_state, error_effect_state):
        if value is None or (isinstance(value, str) and not value.strip()):
            continue
        key = EFFECT_STATE_VOCABULARY.lookup(value)
        if key is None or key == "outcome_unknown":
            readings.add("unknown")
        elif key == "committed":
            readings.add("committed")
    for reading in ("unknown", "committed"):
        if reading in readings:
            return reading
    return "clear"


def unmapped_effect_states(*values: object) -> list[str]:
    """effectState values no table knows (the audit lists them as unmapped)."""
    return [
        v
        for v in values
        if isinstance(v, str) and v.strip() and EFFECT_STATE_VOCABULARY.key(v) is None
    ]


def project(
    status: object,
    *,
    error_code: object = None,
    retry_mode: object = None,
    effect_state: object = None,
    projection_state: object = None,
    error_effect_state: object = None,
) -> Projection:
    """Display projection of a runtime operation; never raises.

    The status table gives the product status; effectState decides certainty
    and retry (DESIGN.md, Runtime operation): an effect that may have happened
    is never ``safe_to_retry``. ``projection_state`` stays visible beside it;
    the projection audit checks it.
    """
    key = TABLE.key(status)
    if key is None:
        return unmapped(RULE_PREFIX)
    row = TABLE[key]
    rule = f"{RULE_PREFIX}:{key}"
    overrides: dict[str, str] = {}
    code = ERROR_CODE_VOCABULARY.key(error_code) or (
        error_code.strip() if isinstance(error_code, str) else ""
    )
    if key == "failed" and code:
        overrides["reason"] = code
        rule += "+code"
    effect = effect_reading(effect_state, error_effect_state)
    if effect == "unknown" or code == "OUTCOME_UNKNOWN":
        # Seed: "the platform cannot prove whether the side effect happened;
        # automatic retry is unsafe", whatever the status says.
        overrides.update(outcome_certainty=UNCERTAIN, retry_policy=MANUAL_REVIEW)
        if key == "failed" and not code:
            overrides["reason"] = "outcome_unknown"
        unknown = unmapped_effect_states(effect_state, error_effect_state)
        rule += "+effect:unmapped" if unknown else "+effect:outcome_unknown"
        return row.project(rule, **overrides)
    if (
        effect == "committed"
        and row.status in (FAILED, CANCELLED)
        and status_key(key) in EFFECT_DECIDES
    ):
        # The effect happened: certain, but a replay would repeat it.
        overrides.update(outcome_certainty=CERTAIN, retry_policy=MANUAL_REVIEW)
        if row.status == CANCELLED:
            overrides["reason"] = "effect_committed"
        return row.project(rule + "+effect:committed", **overrides)
    mode = RETRY_MODE_VOCABULARY.key(retry_mode)
    if key in ("failed", "expired") and mode is not None:
        overrides["retry_policy"] = RETRY_POLICY_BY_MODE[mode]
        rule += f"+retry:{mode}"
    return enforce_uncertain_review(row.project(rule, **overrides))


def may_have_happened(
    status: object,
    effect_state: object = None,
    error_effect_state: object = None,
    code: object = None,
) -> bool:
    """Might this operation's side effect have happened? (the no-replay invariant)"""
    key = TABLE.key(status)
    if key is None or key in EFFECT_COMMITTED_STATUSES or key == "outcome_unknown":
        return True
    if ERROR_CODE_VOCABULARY.key(code) == "OUTCOME_UNKNOWN":
        return True
    return effect_reading(effect_state, error_effect_state) != "clear"


def status_key(status: object) -> str | None:
    """The canonical spelling of a raw status (any case, both cancel spellings)."""
    key = TABLE.key(status)
    return "cancelled" if key == "canceled" else key


def is_known(status: object) -> bool:
    return TABLE.key(status) is not None


def is_terminal(status: object) -> bool:
    """Terminal by our table (raw status); the upstream flag is checked by the audit."""
    return status_key(status) in TERMINAL_STATUSES


def is_cancellable(status: object) -> bool:
    """Only queued or running operations may be cancelled (DESIGN.md, Cancel rules)."""
    return status_key(status) in CANCELLABLE_STATUSES


def is_cancelled(status: object) -> bool:
    return status_key(status) == "cancelled"


def cancel_refusal_reason(status: object) -> tuple[str, Said, Said] | None:
    """Why an operation may not be cancelled: (code, words, short summary); None when it may.

    The one cancel rule for operations (DESIGN.md, Cancel rules). Words and summary
    are English ``Said`` sentences: the Django side translates them where shown.
    """
    key = status_key(status)
    if key in CANCELLABLE_STATUSES:
        return None
    if key == "outcome_unknown":
        return (
            "outcome_unknown",
            gettext_noop(
                "The platform cannot prove whether the effect happened: replay is unsafe."
            ),
            gettext_noop("%(status)s: replay is unsafe", status="outcome_unknown"),
        )
    if key in EFFECT_COMMITTED_STATUSES:
        return (
            "effect_committed",
            gettext_noop(
                "The effect has already happened on the instance: it cannot be cancelled."
            ),
            gettext_noop("%(status)s: the effect has already happened", status=key),
        )
    if key in TERMINAL_STATUSES:
        return (
            "ended",
            gettext_noop("The operation has already ended (%(status)s).", status=key),
            gettext_noop("already %(status)s", status=key),
        )
    shown = status.strip() if isinstance(status, str) else status
    return (
        "unmapped",
        gettext_noop(
            "Unknown status %(status)s: the console cannot tell whether a cancel is safe.",
            status=repr(shown),
        ),
        gettext_noop(
            "unknown status %(status)s: cannot tell whether a cancel is safe", status=repr(shown)
        ),
    )


def cancel_refusal(status: object) -> Said | None:
    """Why an operation may not be cancelled, in words; ``None`` when it may.

    English (a ``Said``): pages show it through ``mirror.i18n.translated``.
    """
    reason = cancel_refusal_reason(status)
    return None if reason is None else reason[1]


def producer_notes(
    status: object, effect_state: object = None, retry_mode: object = None
) -> list[str]:
    """Accepted values not spelled as the tables write them (the audit's producer notes)."""
    notes = []
    if TABLE.key(status) == "canceled":
        notes.append("status: foreign cancel spelling")
    elif note := spelling_note(status, TABLE.key(status)):
        notes.append(f"status: {note}")
    if EFFECT_STATE_VOCABULARY.key(effect_state) == "canceled":
        notes.append("effectState: foreign cancel spelling")
    elif note := spelling_note(effect_state, EFFECT_STATE_VOCABULARY.key(effect_state)):
        notes.append(f"effectState: {note}")
    if note := spelling_note(retry_mode, RETRY_MODE_VOCABULARY.key(retry_mode)):
        notes.append(f"retryMode: {note}")
    return notes


def cancel_spelling() -> str:
    """Runtime operations write the British spelling."""
    return "cancelled"
