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

from beeos_console.mirror.said import Said, gettext_noop
from beeos_console.mirror.states import (
    CANCELLED,
    CERTAIN,
    COMPLETED,
    FAILED,
    MANUAL_REVIEW,
    OURS,
    OUTCOME_CERTAINTIES,
    PROCESSING,
    QUEUED,
    RETRY_POLICIES,
    SAFE_TO_RETRY,
    SEED,
    UNCERTAIN,
    Projection,
    Row,
    Vocabulary,
    enforce_uncertain_review,
    normalise_raw,
    spelling_note,
    unmapped,
)

# Protocols a task row can come from.
PRODUCT: Final = "product"
OPENAPI: Final = "openapi"
A2A: Final = "a2a"
TASK_PROTOCOLS: Final = (OPENAPI, A2A, PRODUCT)
# Message envelopes have their own state machine ("message" rule prefix).
MESSAGE: Final = "message"

# Reasons of a task paused waiting on its caller (OpenAPI and A2A alike).
PAUSED_REASONS: Final = frozenset({"input_required", "auth_required"})

PROTOCOL_LABELS: Final = {OPENAPI: "OpenAPI", A2A: "A2A", PRODUCT: "Product", MESSAGE: "Message"}

# --- Product / legacy producers (readers accept all, writers emit the five) ---
PRODUCT_TABLE: Final[Vocabulary[Row]] = Vocabulary(
    {
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
)
PRODUCT_LEGACY_VALUES: Final = (
    "pending",
    "running",
    "succeeded",
    "timeout",
    "uncertain",
    "canceled",
)

# --- OpenAPI task (/tasks wire; beeos_sdk TaskStatus) ---
OPENAPI_TABLE: Final[Vocabulary[Row]] = Vocabulary(
    {
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
)
# beeos_sdk's TaskStatus, value for value: tests/test_sdk_vocabularies.py fails when
# the SDK adds, renames or drops one. Written out, not read from the enum: processes
# start without the SDK (why: beeos_console/upstream/sdk.py).
OPENAPI_WIRE_VALUES: Final = (
    "queued",
    "running",
    "input_required",
    "auth_required",
    "completed",
    "failed",
    "canceled",
    "timeout",
    "rejected",
)
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
A2A_TABLE: Final[Vocabulary[Row]] = Vocabulary(
    {
        **_A2A_ROWS,
        **{enum: _A2A_ROWS[json] for enum, json in A2A_ENUM_TO_JSON.items()},
        # Readers accept the British spelling too (seed: "Readers should accept both").
        "cancelled": Row(CANCELLED),
        "TASK_STATE_CANCELLED": Row(CANCELLED),
    }
)
A2A_TERMINAL_JSON: Final = frozenset({"completed", "failed", "canceled", "rejected", "timeout"})

# --- Message envelope (beeos_sdk MessageState / StopReason) ---
# beeos_sdk's MessageState and StopReason, value for value (checked as above).
MESSAGE_STATES: Final = ("streaming", "completed", "failed", "refused", "cancelled")
MESSAGE_TERMINAL_STATES: Final = frozenset({"completed", "failed", "refused", "cancelled"})
# For database filters: the foreign cancel spelling is terminal too
# (``is_message_terminal`` also reads any case).
MESSAGE_TERMINAL_SPELLINGS: Final = MESSAGE_TERMINAL_STATES | {"canceled"}
STOP_REASONS: Final = (
    "end_turn",
    "max_tokens",
    "tool_use",
    "user_stop",
    "timeout",
    "error",
    "refused",
    "content_filter",
    "agent_lost",
)
STOP_REASON_VOCABULARY: Final[Vocabulary[str]] = Vocabulary(STOP_REASONS)
# A reply that ended this way may have acted before it stopped: uncertain.
UNCERTAIN_STOP_REASONS: Final = frozenset({"timeout", "agent_lost"})
# The message type whose terminal envelope is the evidence for a task result.
AGENT_REPLY: Final = "agent_reply"
MESSAGE_TABLE: Final[Vocabulary[Row]] = Vocabulary(
    {
        "streaming": Row(PROCESSING, source=OURS),
        "completed": Row(COMPLETED, source=OURS),
        # reason = stop_reason, filled in by project_message.
        "failed": Row(FAILED, "error", retry_policy=MANUAL_REVIEW, source=OURS),
        "refused": Row(FAILED, "refused", source=OURS),
        "cancelled": Row(CANCELLED, source=OURS),
        # Accepted and terminal like `cancelled` (DESIGN.md, Message envelope).
        "canceled": Row(CANCELLED, source=OURS),
    }
)
MESSAGE_STATE_VOCABULARY: Final[Vocabulary[Row]] = MESSAGE_TABLE

TABLES: Final = {PRODUCT: PRODUCT_TABLE, OPENAPI: OPENAPI_TABLE, A2A: A2A_TABLE}


# Failure details a product producer may send beside ``status`` (seed example).
PRODUCER_DETAILS: Final = ("reason", "outcome_certainty", "retry_policy")
REASON_MAX: Final = 64
CERTAINTY_VOCABULARY: Final[Vocabulary[str]] = Vocabulary(OUTCOME_CERTAINTIES)
RETRY_POLICY_VOCABULARY: Final[Vocabulary[str]] = Vocabulary(RETRY_POLICIES)


def table_for(protocol: str) -> Vocabulary[Row] | None:
    if protocol == MESSAGE:
        return MESSAGE_TABLE
    return TABLES.get(protocol)


def canonical_state(protocol: str, raw_state: object) -> str | None:
    """The table's own spelling of ``raw_state`` (case and blanks ignored), or None."""
    table = table_for(protocol) if isinstance(protocol, str) else None
    return None if table is None else table.key(raw_state)


def project(protocol: str, raw_state: object, **evidence: object) -> Projection:
    """Project a task's or message's raw state; never raises.

    ``evidence``: messages use ``stop_reason``; product producers' failure
    details (``reason``, ``outcome_certainty``, ``retry_policy``) are kept as
    sent when valid. Other protocols ignore it.
    """
    if not isinstance(protocol, str):
        return unmapped("unknown")
    if protocol == MESSAGE:
        return project_message(raw_state, stop_reason=evidence.get("stop_reason"))
    table = TABLES.get(protocol)
    if table is None:
        return unmapped(protocol or "unknown")
    key = table.key(raw_state)
    if key is None:
        return unmapped(protocol)
    projection = table[key].project(f"{protocol}:{key}")
    if protocol == PRODUCT:
        projection = with_producer_details(projection, evidence)
    return projection


def producer_detail_error(name: str, value: object) -> Said | None:
    """Why a product producer's failure detail is invalid, or None when it is usable.

    English (a ``Said``): the ingest answer translates it (``mirror.i18n.translated``).
    """
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        return gettext_noop("must be a string")
    if name == "outcome_certainty" and CERTAINTY_VOCABULARY.key(value) is None:
        return gettext_noop("must be one of %(values)s", values=", ".join(OUTCOME_CERTAINTIES))
    if name == "retry_policy" and RETRY_POLICY_VOCABULARY.key(value) is None:
        return gettext_noop("must be one of %(values)s", values=", ".join(RETRY_POLICIES))
    if name == "reason" and (len(value) > REASON_MAX or not value.strip()):
        return gettext_noop("must be 1-%(max)s characters", max=REASON_MAX)
    return None


def with_producer_details(projection: Projection, details: dict[str, object]) -> Projection:
    """Keep a product producer's valid details; the table fills only what is missing.

    Nothing makes an ``uncertain`` outcome ``certain`` (the table's uncertainty
    wins over a producer's ``certain``), and ``uncertain`` always means
    ``manual_review``. An unmapped state stays unmapped whatever was sent.
    """
    if projection.is_unmapped:
        return projection
    values = {
        "reason": projection.reason,
        "outcome_certainty": projection.outcome_certainty,
        "retry_policy": projection.retry_policy,
    }
    kept = []
    for name in PRODUCER_DETAILS:
        value = details.get(name)
        if value in (None, "") or producer_detail_error(name, value) is not None:
            continue
        if name == "reason":
            values["reason"] = value.strip()  # type: ignore[union-attr]
        elif name == "outcome_certainty":
            sent = CERTAINTY_VOCABULARY.key(value)
            if sent == CERTAIN and projection.outcome_certainty == UNCERTAIN:
                continue
            values["outcome_certainty"] = sent  # type: ignore[assignment]
        else:
            values["retry_policy"] = RETRY_POLICY_VOCABULARY.key(value)  # type: ignore[assignment]
        kept.append(name)
    if not kept:
        return projection
    rule = f"{projection.rule}+producer:{','.join(kept)}"
    return enforce_uncertain_review(
        Projection(rule=rule, status=projection.status, source=projection.source, **values)
    )


def producer_details(protocol: str, payload: object) -> dict[str, object]:
    """The failure details a stored product payload carries (empty for other protocols)."""
    if protocol != PRODUCT or not isinstance(payload, dict):
        return {}
    return {name: payload.get(name) for name in PRODUCER_DETAILS if payload.get(name)}


def project_stored(protocol: str, raw_state: object, payload: object) -> Projection:
    """Today's projection of a stored task row: its raw state plus its payload's details."""
    return project(protocol, raw_state, **producer_details(protocol, payload))


def project_message(state: object, *, stop_reason: object = None) -> Projection:
    """A message envelope's evidence rule (DESIGN.md, ours)."""
    key = MESSAGE_TABLE.key(state)
    if key is None:
        return unmapped(MESSAGE)
    row = MESSAGE_TABLE[key]
    # An unknown stop_reason is kept raw; it adds nothing to the projection.
    stop = STOP_REASON_VOCABULARY.key(stop_reason) or ""
    rule = f"{MESSAGE}:{key}"
    cancelled = row.status == CANCELLED
    if key == "failed" and stop in UNCERTAIN_STOP_REASONS:
        # The reply died mid-flight: tool calls may already have reached the
        # agent or device, so this is as uncertain as a cancelled+timeout (ours).
        return row.project(f"{rule}+{stop}", reason=stop, outcome_certainty=UNCERTAIN)
    if key == "failed" and stop:
        return row.project(f"{rule}+stop_reason", reason=stop)
    if cancelled and stop == "timeout":
        # A timed-out reply may have reached the agent: not a clean cancel.
        return row.project(
            f"{rule}+timeout",
            status=FAILED,
            reason="timeout",
            outcome_certainty=UNCERTAIN,
            retry_policy=MANUAL_REVIEW,
        )
    if cancelled and stop == "user_stop":
        return row.project(f"{rule}+user_stop", reason="user_stop")
    return row.project(rule)


def is_message_terminal(state: object) -> bool:
    """A terminal envelope never changes (``canceled`` included, any case)."""
    key = MESSAGE_TABLE.key(state)
    return key is not None and key != "streaming"


def is_known(protocol: str, raw_state: object) -> bool:
    return not project(protocol, raw_state).is_unmapped


def is_terminal(protocol: str, raw_state: object) -> bool:
    """Terminal by the product projection: completed, failed or cancelled."""
    return project(protocol, raw_state).is_terminal


def is_cancellable(protocol: str, raw_state: object) -> bool:
    """A task may be cancelled while queued or processing (paused included)."""
    return project(protocol, raw_state).status in (QUEUED, PROCESSING)


def is_paused(protocol: str, raw_state: object) -> bool:
    """Waiting on the caller (input / auth required): resumable, not finished."""
    projection = project(protocol, raw_state)
    return projection.status == PROCESSING and projection.reason in PAUSED_REASONS


def is_a2a_enum_spelling(raw_state: object) -> bool:
    return isinstance(raw_state, str) and raw_state.strip().upper().startswith("TASK_STATE_")


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
    key = canonical_state(protocol, raw_state)
    if protocol == OPENAPI:
        return key == "cancelled"
    if protocol == A2A:
        return key in ("cancelled", "TASK_STATE_CANCELLED")
    if protocol in (PRODUCT, MESSAGE):
        return key == "canceled"
    return False


def producer_note(protocol: str, raw_state: object) -> str | None:
    """Why an accepted raw state is not spelled as this protocol writes it, or None.

    Letter case, surrounding blanks or the other protocol's cancel spelling:
    the projection audit lists these as producer notes, never as drift.
    """
    if is_foreign_cancel_spelling(protocol, raw_state):
        return "foreign cancel spelling"
    return spelling_note(raw_state, canonical_state(protocol, raw_state))


def a2a_wire_json(raw_state: object) -> str:
    """The A2A JSON wire spelling of a stored A2A value (internal values mapped)."""
    key = A2A_TABLE.key(raw_state) or normalise_raw(raw_state)
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
        return A2A_TABLE.key(raw) or raw
    if protocol == OPENAPI and project(protocol, raw).status == CANCELLED:
        return cancel_spelling(OPENAPI)
    if protocol == PRODUCT:
        return product_write_value(protocol, raw)
    return raw


def product_write_value(protocol: str, raw_state: object) -> str:
    """What a product writer emits for this raw state: one of the five, or ``unmapped``."""
    return project(protocol, raw_state).status


def explain(protocol: str, raw_state: object, projection: Projection) -> Said:
    """The rule in words.

    e.g. "OpenAPI `timeout` → failed · timeout · uncertain · manual review".
    The outcome and the rule id are symbols (never translated); the words around
    them are a ``Said`` the detail page translates.
    """
    label = PROTOCOL_LABELS.get(protocol, protocol or "Unknown")
    shown = raw_state if isinstance(raw_state, str) else repr(raw_state)
    source = gettext_noop("seed") if projection.source == SEED else gettext_noop("our rule")
    return gettext_noop(
        "%(protocol)s `%(raw)s` → %(outcome)s (%(source)s; rule %(rule)s)",
        protocol=label,
        raw=shown,
        outcome=projection.describe(),
        source=source,
        rule=projection.rule,
    )


def known_values(protocol: str) -> tuple[str, ...]:
    if protocol == MESSAGE:
        return tuple(MESSAGE_TABLE)
    return tuple(TABLES.get(protocol, {}))
