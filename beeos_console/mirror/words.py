"""Every status in plain words, and what to do about it: pure Python, no Django imports.

One place for the sentences support staff read (issue #14, point 4): each
``reason`` the state tables can produce (task, message and operation reasons,
stop reasons, runtime error codes), each ``outcome_certainty`` and each
``retry_policy``. Detail pages, list tooltips and cancel refusals read them
from here. The rule syntax (``projection_rule``, the rule in symbols) is for
admins only and never appears in these sentences: no backticks, no rule ids.
"""

from __future__ import annotations

from typing import Final

# --- certainty and retry policy ----------------------------------------------

CERTAINTY_WORDS: Final = {
    "certain": "the outcome is known: what the status says is what happened",
    "uncertain": ("the outcome is not known: the command may have reached the agent or device"),
}

RETRY_WORDS: Final = {
    "none": "no retry: there is nothing to send again",
    "safe_to_retry": "safe to retry: nothing happened, sending it again is safe",
    "manual_review": (
        "manual review: check with the agent's owner whether the command ran before doing anything"
    ),
}

# --- product status -----------------------------------------------------------

STATUS_WORDS: Final = {
    "queued": "waiting to start",
    "processing": "in progress",
    "completed": "finished successfully",
    "failed": "ended without success",
    "cancelled": "cancelled",
    "unmapped": "in a state the console does not know",
}

# --- reasons: task and operation tables, message evidence --------------------

REASON_WORDS: Final = {
    "timeout": (
        "timed out: the command may have reached the agent or device before time ran out; "
        "check what happened before sending it again"
    ),
    "rejected": ("rejected: the agent refused the task before starting it, so nothing happened"),
    "input_required": (
        "waiting for input: the agent asked the caller a question and is paused until "
        "it is answered"
    ),
    "auth_required": (
        "waiting for permission: the agent needs the caller to grant access before it can go on"
    ),
    "outcome_unknown": (
        "outcome unknown: the platform cannot prove whether the effect happened; do not replay it"
    ),
    "effect_committed": (
        "the effect already happened: the operation was cancelled after its effect was "
        "applied on the instance; sending it again would repeat it"
    ),
    "projection_blocked": (
        "projection blocked: the effect happened on the instance, but the platform cannot "
        "bring its own view up to date; a person must look, a retry will not help"
    ),
    "projection_pending": (
        "the effect happened on the instance; the platform is still updating its own view"
    ),
    "runtime_committed": (
        "the effect has been applied on the instance; the operation is finishing"
    ),
    "expired": "expired: the command was not run before its deadline",
    "error": "failed with an error: the error code and text below say what went wrong",
    "unmapped_state": (
        "unknown state: no rule knows this raw value, so the console cannot tell what "
        "happened; an admin has to map it"
    ),
    "refused": "refused: the agent declined to do it",
    # Message stop reasons (beeos_sdk StopReason): a failed reply's reason.
    "end_turn": "the agent finished its reply",
    "max_tokens": "the reply was cut off at its length limit",
    "tool_use": "the reply stopped to call a tool",
    "user_stop": "stopped by a user: the reply was cancelled on request",
    "content_filter": "the reply was blocked by the content filter",
    "agent_lost": (
        "the agent was lost in the middle of its reply: it may have acted before it "
        "stopped; check before sending it again"
    ),
}

# --- runtime error codes (contracts/runtime-error-codes-v4.json) --------------

ERROR_CODE_WORDS: Final = {
    "AGENT_DEFAULT_MODEL_NOT_CONFIGURED": (
        "the agent has no default model configured: set one, then send the command again"
    ),
    "COMMAND_EXPIRED": "the command expired before the instance ran it",
    "CONTRACT_VERSION_MISMATCH": (
        "the instance speaks another contract version: update the instance or the caller"
    ),
    "CONVERSATION_CLEARING": (
        "the conversation was being cleared: wait until it is done, then try again"
    ),
    "HISTORY_GENERATION_MISMATCH": (
        "the conversation history changed meanwhile: reload it before trying again"
    ),
    "IDEMPOTENCY_CONFLICT": (
        "the same idempotency key was used for a different request: nothing new was run"
    ),
    "INSTANCE_EPOCH_MISMATCH": (
        "the instance restarted meanwhile: check its state before trying again"
    ),
    "INSTANCE_OFFLINE": "the instance was offline",
    "INVALID_EXECUTION_GRANT": "the execution grant was not valid: nothing was run",
    "INVALID_INVOCATION": "the command was not valid: nothing was run",
    "METHOD_NOT_SUPPORTED": "the instance does not support this command",
    "OPERATION_CANCELLED": "the operation was cancelled",
    "OPERATION_NOT_CANCELLABLE": "the operation could no longer be cancelled",
    "OPERATION_NOT_FOUND": "the platform does not know this operation",
    "OUTCOME_UNKNOWN": ("the platform cannot prove whether the effect happened; do not replay it"),
    "PROJECTION_BLOCKED": (
        "the effect happened, but the platform cannot bring its own view up to date"
    ),
    "PROJECTION_PENDING": ("the effect happened; the platform is still updating its own view"),
    "RUNTIME_EXECUTION_FAILED": "the instance ran the command and it failed",
    "UNAUTHORIZED_PUBLISHER": "the sender was not allowed to send this command",
    "UNAUTHORIZED_TARGET": "the command's target was not allowed",
    "USE_AGENTS_API": "this change goes through the agents API, not a runtime operation",
}


def certainty_words(certainty: str | None) -> str:
    return CERTAINTY_WORDS.get(certainty or "", f"certainty {certainty or 'not recorded'}")


def retry_words(policy: str | None) -> str:
    return RETRY_WORDS.get(policy or "", f"retry policy {policy or 'not recorded'}")


def status_words(status: str | None) -> str:
    return STATUS_WORDS.get(status or "", status or "no status")


def error_code_words(code: str | None) -> str:
    """The code's meaning, or a plain sentence for a code no contract lists."""
    if not code:
        return ""
    known = ERROR_CODE_WORDS.get(code) or ERROR_CODE_WORDS.get(code.strip().upper())
    return known or f"error code {code} reported by the platform: see the error text"


def reason_words(reason: str | None) -> str:
    """A sentence for every reason the tables can produce; error codes as such.

    A reason nobody wrote a sentence for (a product producer's own) is still
    said in words, never dropped.
    """
    if not reason:
        return ""
    if reason in REASON_WORDS:
        return REASON_WORDS[reason]
    if reason in ERROR_CODE_WORDS or reason.isupper():
        return f"error {reason}: {error_code_words(reason)}"
    return f"reason given by the producer: {reason}"


def what_to_do(status: str | None, certainty: str | None, policy: str | None) -> str:
    """The one next step, from certainty and retry policy (uncertain wins)."""
    if certainty == "uncertain":
        return (
            "Do not send it again: check with the agent's owner or on the instance whether "
            "the command ran first."
        )
    if status in ("queued", "processing"):
        return "Nothing to do yet; cancel it if it is stuck or no longer wanted."
    if policy == "safe_to_retry":
        return "Nothing happened: sending it again is safe."
    if policy == "manual_review":
        return "A person has to look before anything is sent again."
    return "Nothing to do."


def summary(
    status: str | None, reason: str | None, certainty: str | None, policy: str | None
) -> str:
    """Reason, certainty and retry policy in one line (list tooltips)."""
    parts = [reason_words(reason)] if reason else [status_words(status)]
    parts += [certainty_words(certainty), retry_words(policy)]
    return "; ".join(p for p in parts if p) + "."
