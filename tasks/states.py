"""Task and message vocabularies and their product projection: pure Python.

Tables follow ``shared/DESIGN.md`` ("State vocabularies and the product
projection"); each row says whether it comes from the seeds or is ours. The
wire vocabularies are checked against the official SDKs in the tests
(``beeos_sdk.models.TaskStatus``, ``MessageState``, ``StopReason``).

``project(protocol, raw_state, **evidence)`` never raises: a value no table
knows projects as ``unmapped``.
"""

from __future__ import annotations

from typing import Final

from beeos_sdk.models import MessageState, StopReason, TaskStatus

from beeos_console.states import (
    CANCELLED,
    COMPLETED,
    FAILED,
    MANUAL_REVIEW,
    OURS,
    PROCESSING,
    QUEUED,
    SAFE_TO_RETRY,
    SEED,
    UNCERTAIN,
    Projection,
    Row,
    normalise_raw,
    unmapped,
)

# Protocols a task row can come from.
PRODUCT: Final = "product"
OPENAPI: Final = "openapi"
A2A: Final = "a2a"
TASK_PROTOCOLS: Final = (OPENAPI, A2A, PRODUCT)
# Message envelopes have their own state machine ("message" rule prefix).
MESSAGE: Final = "message"

PROTOCOL_LABELS: Final = {OPENAPI: "OpenAPI", A2A: "A2A", PRODUCT: "Product", MESSAGE: "Message"}

# --- Product / legacy producers (readers accept all, writers emit the five) ---
PRODUCT_TABLE: Final[dict[str, Row]] = {
    "queued": Row(QUEUED),
    "processing": Row(PROCESSING),
    "completed": Row(COMPLETED),
    "failed": Row(FAILED, "error", retry_policy=MANUAL_REVIEW, source=OURS),
    "cancelled": Row(CANCELLED),
    # legacy producers
    "pending": Row(QUEUED),
    "running": Row(PROCESSING),
    "succeeded": Row(COMPLETED),
    "timeout": Row(FAILED, "timeout", UNCERTAIN, MANUAL_REVIEW),
    "uncertain": Row(FAILED, "outcome_unknown", UNCERTAIN, MANUAL_REVIEW, source=OURS),
    "canceled": Row(CANCELLED),
}
PRODUCT_LEGACY_VALUES: Final = (
    "pending",
    "running",
    "succeeded",
    "timeout",
    "uncertain",
    "canceled",
)

# --- OpenAPI task (/tasks wire; beeos_sdk TaskStatus) ---
OPENAPI_TABLE: Final[dict[str, Row]] = {
    "queued": Row(QUEUED),
    "running": Row(PROCESSING),
    # Paused, waiting on the caller: still work in progress (ours).
    "input_required": Row(PROCESSING, "input_required", source=OURS),
    "auth_required": Row(PROCESSING, "auth_required", source=OURS),
    "completed": Row(COMPLETED),
    "failed": Row(FAILED, "error", retry_policy=MANUAL_REVIEW, source=OURS),
    "canceled": Row(CANCELLED),
    # British spelling from a producer that got it wrong: accepted (seed).
    "cancelled": Row(CANCELLED),
    # Reason from the seed; uncertain/manual_review after the seed's example (ours).
    "timeout": Row(FAILED, "timeout", UNCERTAIN, MANUAL_REVIEW, source=OURS),
    "rejected": Row(FAILED, "rejected", retry_policy=SAFE_TO_RETRY, source=OURS),
}
# The SDK's TaskStatus is the source of truth for the wire vocabulary; the
# table above must cover every value of it (tests/test_sdk_vocabularies.py).
OPENAPI_WIRE_VALUES: Final = tuple(v.value for v in TaskStatus)
OPENAPI_TERMINAL_VALUES: Final = frozenset(
    {"completed", "failed", "canceled", "timeout", "rejected"}
)

# --- A2A task: v1 enum names and JSON spellings, plus BeeOS internal values ---
_A2A_ROWS: Final[dict[str, Row]] = {
    "submitted": Row(QUEUED),
    # Internal: projected to the A2A wire as `submitted` (seed).
    "delivered": Row(QUEUED),
    "working": Row(PROCESSING),
    "input-required": Row(PROCESSING, "input_required", source=OURS),
    "auth-required": Row(PROCESSING, "auth_required", source=OURS),
    "completed": Row(COMPLETED),
    "failed": Row(FAILED, "error", retry_policy=MANUAL_REVIEW, source=OURS),
    "canceled": Row(CANCELLED),
    "rejected": Row(FAILED, "rejected", retry_policy=SAFE_TO_RETRY, source=OURS),
    # Internal: projected to the A2A wire as `failed` (seed); certainty ours.
    "timeout": Row(FAILED, "timeout", UNCERTAIN, MANUAL_REVIEW, source=OURS),
}
# v1 protobuf enum name -> JSON spelling.
A2A_ENUM_TO_JSON: Final = {
    "TASK_STATE_SUBMITTED": "submitted",
    "TASK_STATE_WORKING": "working",
    "TASK_STATE_INPUT_REQUIRED": "input-required",
    "TASK_STATE_AUTH_REQUIRED": "auth-required",
    "TASK_STATE_COMPLETED": "completed",
    "TASK_STATE_FAILED": "failed",
    "TASK_STATE_CANCELED": "canceled",
    "TASK_STATE_REJECTED": "rejected",
}
A2A_JSON_VALUES: Final = (
    "submitted",
    "working",
    "input-required",
    "auth-required",
    "completed",
    "failed",
    "canceled",
    "rejected",
)
A2A_INTERNAL_VALUES: Final = ("delivered", "timeout")
# Explicitly "no state": known to the protocol, but says nothing (-> unmapped).
A2A_UNSPECIFIED_VALUES: Final = ("TASK_STATE_UNSPECIFIED", "unknown")
A2A_TABLE: Final[dict[str, Row]] = {
    **_A2A_ROWS,
    **{enum: _A2A_ROWS[json] for enum, json in A2A_ENUM_TO_JSON.items()},
    # Readers accept the British spelling too (seed: "Readers should accept both").
    "cancelled": Row(CANCELLED),
    "TASK_STATE_CANCELLED": Row(CANCELLED),
}
A2A_TERMINAL_JSON: Final = frozenset({"completed", "failed", "canceled", "rejected", "timeout"})

# --- Message envelope (beeos_sdk MessageState / StopReason) ---
MESSAGE_STATES: Final = tuple(v.value for v in MessageState)
MESSAGE_TERMINAL_STATES: Final = frozenset({"completed", "failed", "refused", "cancelled"})
STOP_REASONS: Final = tuple(v.value for v in StopReason)
# A reply that ended this way may have acted before it stopped: uncertain.
UNCERTAIN_STOP_REASONS: Final = frozenset({"timeout", "agent_lost"})
# The message type whose terminal envelope is the evidence for a task result.
AGENT_REPLY: Final = "agent_reply"
MESSAGE_TABLE: Final[dict[str, Row]] = {
    "streaming": Row(PROCESSING, source=OURS),
    "completed": Row(COMPLETED, source=OURS),
    # reason = stop_reason, filled in by project_message.
    "failed": Row(FAILED, "error", retry_policy=MANUAL_REVIEW, source=OURS),
    "refused": Row(FAILED, "refused", source=OURS),
    "cancelled": Row(CANCELLED, source=OURS),
    "canceled": Row(CANCELLED, source=OURS),
}

TABLES: Final = {PRODUCT: PRODUCT_TABLE, OPENAPI: OPENAPI_TABLE, A2A: A2A_TABLE}


def project(protocol: str, raw_state: object, **evidence: object) -> Projection:
    """Project a task's or message's raw state; never raises.

    ``evidence`` is used by messages (``stop_reason``); tasks ignore it.
    """
    if not isinstance(protocol, str):
        return unmapped("unknown")
    if protocol == MESSAGE:
        return project_message(raw_state, stop_reason=evidence.get("stop_reason"))
    table = TABLES.get(protocol)
    key = normalise_raw(raw_state)
    if table is None:
        return unmapped(protocol or "unknown")
    row = table.get(key)
    if row is None:
        return unmapped(protocol)
    return row.project(f"{protocol}:{key}")


def project_message(state: object, *, stop_reason: object = None) -> Projection:
    """A message envelope's evidence rule (DESIGN.md, ours)."""
    key = normalise_raw(state)
    row = MESSAGE_TABLE.get(key)
    if row is None:
        return unmapped(MESSAGE)
    stop = normalise_raw(stop_reason)
    rule = f"{MESSAGE}:{key}"
    if key == "failed" and stop in UNCERTAIN_STOP_REASONS:
        # The reply died mid-flight: tool calls may already have reached the
        # agent or device, so this is as uncertain as a cancelled+timeout (ours).
        return row.project(f"{rule}+{stop}", reason=stop, outcome_certainty=UNCERTAIN)
    if key == "failed" and stop:
        return row.project(f"{rule}+stop_reason", reason=stop)
    if key in ("cancelled", "canceled") and stop == "timeout":
        # A timed-out reply may have reached the agent: not a clean cancel.
        return row.project(
            f"{rule}+timeout",
            status=FAILED,
            reason="timeout",
            outcome_certainty=UNCERTAIN,
            retry_policy=MANUAL_REVIEW,
        )
    if key in ("cancelled", "canceled") and stop == "user_stop":
        return row.project(f"{rule}+user_stop", reason="user_stop")
    return row.project(rule)


def is_known(protocol: str, raw_state: object) -> bool:
    return not project(protocol, raw_state).is_unmapped


def is_terminal(protocol: str, raw_state: object) -> bool:
    """Terminal by the product projection: completed, failed or cancelled."""
    return project(protocol, raw_state).is_terminal


def is_cancellable(protocol: str, raw_state: object) -> bool:
    """A task may be cancelled while queued or processing (paused included)."""
    return project(protocol, raw_state).status in (QUEUED, PROCESSING)


def is_a2a_enum_spelling(raw_state: object) -> bool:
    return isinstance(raw_state, str) and raw_state.strip().startswith("TASK_STATE_")


def cancel_spelling(protocol: str, *, like: object = None) -> str:
    """The raw value a writer emits for "cancelled" in ``protocol``.

    OpenAPI and A2A JSON wire: ``canceled``; the A2A v1 enum:
    ``TASK_STATE_CANCELED`` (chosen when ``like`` is an enum-spelled value);
    product, messages, operations: ``cancelled``.
    """
    if protocol == OPENAPI:
        return "canceled"
    if protocol == A2A:
        return "TASK_STATE_CANCELED" if is_a2a_enum_spelling(like) else "canceled"
    return "cancelled"


def is_foreign_cancel_spelling(protocol: str, raw_state: object) -> bool:
    """Accepted, but not what this protocol's writers emit (a producer note)."""
    key = normalise_raw(raw_state)
    if protocol == OPENAPI:
        return key == "cancelled"
    if protocol == A2A:
        return key in ("cancelled", "TASK_STATE_CANCELLED")
    if protocol in (PRODUCT, MESSAGE):
        return key == "canceled"
    return False


def a2a_wire_json(raw_state: object) -> str:
    """The A2A JSON wire spelling of a stored A2A value (internal values mapped)."""
    key = normalise_raw(raw_state)
    key = A2A_ENUM_TO_JSON.get(key, key)
    remap = {
        "delivered": "submitted",
        "timeout": "failed",
        "cancelled": "canceled",
        "TASK_STATE_CANCELLED": "canceled",
    }
    return remap.get(key, key)


def wire_spelling(protocol: str, raw_state: object) -> str:
    """The state as this protocol's own writers spell it on the wire.

    A2A keeps the producer's style (v1 enum or JSON) with the canceled
    spelling fixed; OpenAPI writes ``canceled``; product writers emit one of
    the five product values. Unknown values come back as received.
    """
    raw = raw_state if isinstance(raw_state, str) else ""
    if protocol == A2A:
        if not is_a2a_enum_spelling(raw):
            return a2a_wire_json(raw)
        if a2a_wire_json(raw) == "canceled":
            return cancel_spelling(A2A, like=raw)
        return raw
    if protocol == OPENAPI and project(protocol, raw).status == CANCELLED:
        return cancel_spelling(OPENAPI)
    if protocol == PRODUCT:
        return product_write_value(protocol, raw)
    return raw


def product_write_value(protocol: str, raw_state: object) -> str:
    """What a product writer emits for this raw state: one of the five, or ``unmapped``."""
    return project(protocol, raw_state).status


def explain(protocol: str, raw_state: object, projection: Projection) -> str:
    """The rule in words.

    e.g. "OpenAPI `timeout` → failed · timeout · uncertain · manual review".
    """
    label = PROTOCOL_LABELS.get(protocol, protocol or "Unknown")
    shown = raw_state if isinstance(raw_state, str) else repr(raw_state)
    source = "seed" if projection.source == SEED else "our rule"
    return f"{label} `{shown}` → {projection.describe()} ({source}; rule {projection.rule})"


def known_values(protocol: str) -> tuple[str, ...]:
    if protocol == MESSAGE:
        return tuple(MESSAGE_TABLE)
    return tuple(TABLES.get(protocol, {}))
