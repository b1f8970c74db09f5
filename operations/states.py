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

from beeos_sdk.models import ServiceRuntimeMethod

from beeos_console.states import (
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
    normalise_raw,
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
METHODS: Final = tuple(v.value for v in ServiceRuntimeMethod)

# Certain failures follow retryMode (DESIGN.md, ours).
RETRY_POLICY_BY_MODE: Final = {
    "resubmit": SAFE_TO_RETRY,
    "resume": SAFE_TO_RETRY,
    "none": RETRY_NONE,
}

TABLE: Final[dict[str, Row]] = {
    "queued": Row(QUEUED, source=OURS),
    "running": Row(PROCESSING, source=OURS),
    "runtime_committed": Row(PROCESSING, "runtime_committed", source=OURS),
    "projection_pending": Row(PROCESSING, "projection_pending", source=OURS),
    "succeeded": Row(COMPLETED, source=OURS),
    "cancelled": Row(CANCELLED, source=OURS),
    # reason = error code, retry policy from retryMode: filled in by project().
    "failed": Row(FAILED, "error", CERTAIN, MANUAL_REVIEW, source=OURS),
    "expired": Row(FAILED, "expired", CERTAIN, MANUAL_REVIEW, source=OURS),
    "outcome_unknown": Row(FAILED, "outcome_unknown", UNCERTAIN, MANUAL_REVIEW, source=OURS),
    # The effect did happen; projection cannot converge: a person must look.
    "projection_blocked": Row(FAILED, "projection_blocked", CERTAIN, MANUAL_REVIEW, source=OURS),
}
# The American spelling from a producer that got it wrong: accepted.
TABLE["canceled"] = TABLE["cancelled"]


def project(
    status: object,
    *,
    error_code: object = None,
    retry_mode: object = None,
    effect_state: object = None,
    projection_state: object = None,
) -> Projection:
    """Display projection of a runtime operation; never raises.

    ``effect_state`` and ``projection_state`` do not change the display value
    (they stay visible beside it); the projection audit checks them.
    """
    key = normalise_raw(status)
    row = TABLE.get(key)
    if row is None:
        return unmapped(RULE_PREFIX)
    rule = f"{RULE_PREFIX}:{key}"
    if key not in ("failed", "expired"):
        return row.project(rule)
    overrides: dict[str, str] = {}
    code = normalise_raw(error_code)
    if key == "failed" and code:
        overrides["reason"] = code
        rule += "+code"
    mode = normalise_raw(retry_mode)
    if mode in RETRY_POLICY_BY_MODE:
        overrides["retry_policy"] = RETRY_POLICY_BY_MODE[mode]
        rule += f"+retry:{mode}"
    return row.project(rule, **overrides)


def is_known(status: object) -> bool:
    return normalise_raw(status) in TABLE


def is_terminal(status: object) -> bool:
    """Terminal by our table (raw status); the upstream flag is checked by the audit."""
    return normalise_raw(status) in TERMINAL_STATUSES | {"canceled"}


def is_cancellable(status: object) -> bool:
    """Only queued or running operations may be cancelled (DESIGN.md, Cancel rules)."""
    return normalise_raw(status) in CANCELLABLE_STATUSES


def cancel_refusal(status: object) -> str | None:
    """Why an operation may not be cancelled, in words; ``None`` when it may."""
    key = normalise_raw(status)
    if key in CANCELLABLE_STATUSES:
        return None
    if key == "outcome_unknown":
        return "The platform cannot prove whether the effect happened: replay is unsafe."
    if key in EFFECT_COMMITTED_STATUSES:
        return "The effect has already happened on the instance: it cannot be cancelled."
    if key in TERMINAL_STATUSES or key == "canceled":
        return f"The operation has already ended ({key})."
    return f"Unknown status {key!r}: the console cannot tell whether a cancel is safe."


def cancel_spelling() -> str:
    """Runtime operations write the British spelling."""
    return "cancelled"
