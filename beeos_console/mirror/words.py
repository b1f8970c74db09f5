"""Every status in plain words, and what to do about it: pure Python, no Django imports.

One place for the sentences support staff read (issue #14, point 4): each
``reason`` the state tables can produce (task, message and operation reasons,
stop reasons, runtime error codes), each ``outcome_certainty`` and each
``retry_policy``. Detail pages, list tooltips and cancel refusals read them
from here. The rule syntax (``projection_rule``, the rule in symbols) is for
admins only and never appears in these sentences: no backticks, no rule ids.

Every sentence is English and marked with ``said.gettext_noop`` (a ``Said``: a
``str`` that keeps its msgid); pages read them through ``mirror.i18n``, which
translates them at display time. Codes and raw values are parameters, never
part of a msgid.
"""

from __future__ import annotations

from typing import Final

from beeos_console.mirror.said import Said, gettext_noop, verbatim

# --- certainty and retry policy ----------------------------------------------

CERTAINTY_WORDS: Final = {
    "certain": gettext_noop("the outcome is known: what the status says is what happened"),
    "uncertain": gettext_noop(
        "the outcome is not known: the command may have reached the agent or device"
    ),
}

RETRY_WORDS: Final = {
    "none": gettext_noop("no retry: there is nothing to send again"),
    "safe_to_retry": gettext_noop("safe to retry: nothing happened, sending it again is safe"),
    "manual_review": gettext_noop(
        "manual review: check with the agent's owner whether the command ran before doing anything"
    ),
}

# --- product status -----------------------------------------------------------

STATUS_WORDS: Final = {
    "queued": gettext_noop("waiting to start"),
    "processing": gettext_noop("in progress"),
    "completed": gettext_noop("finished successfully"),
    "failed": gettext_noop("ended without success"),
    "cancelled": gettext_noop("cancelled"),
    "unmapped": gettext_noop("in a state the console does not know"),
}

# --- reasons: task and operation tables, message evidence --------------------

REASON_WORDS: Final = {
    "timeout": gettext_noop(
        "timed out: the command may have reached the agent or device before time ran out; "
        "check what happened before sending it again"
    ),
    "rejected": gettext_noop(
        "rejected: the agent refused the task before starting it, so nothing happened"
    ),
    "input_required": gettext_noop(
        "waiting for input: the agent asked the caller a question and is paused until "
        "it is answered"
    ),
    "auth_required": gettext_noop(
        "waiting for permission: the agent needs the caller to grant access before it can go on"
    ),
    "outcome_unknown": gettext_noop(
        "outcome unknown: the platform cannot prove whether the effect happened; do not replay it"
    ),
    "effect_committed": gettext_noop(
        "the effect already happened: the operation was cancelled after its effect was "
        "applied on the instance; sending it again would repeat it"
    ),
    "projection_blocked": gettext_noop(
        "projection blocked: the effect happened on the instance, but the platform cannot "
        "bring its own view up to date; a person must look, a retry will not help"
    ),
    "projection_pending": gettext_noop(
        "the effect happened on the instance; the platform is still updating its own view"
    ),
    "runtime_committed": gettext_noop(
        "the effect has been applied on the instance; the operation is finishing"
    ),
    "expired": gettext_noop("expired: the command was not run before its deadline"),
    "error": gettext_noop(
        "failed with an error: the error code and text below say what went wrong"
    ),
    "unmapped_state": gettext_noop(
        "unknown state: no rule knows this raw value, so the console cannot tell what "
        "happened; an admin has to map it"
    ),
    "refused": gettext_noop("refused: the agent declined to do it"),
    # Message stop reasons (beeos_sdk StopReason): a failed reply's reason.
    "end_turn": gettext_noop("the agent finished its reply"),
    "max_tokens": gettext_noop("the reply was cut off at its length limit"),
    "tool_use": gettext_noop("the reply stopped to call a tool"),
    "user_stop": gettext_noop("stopped by a user: the reply was cancelled on request"),
    "content_filter": gettext_noop("the reply was blocked by the content filter"),
    "agent_lost": gettext_noop(
        "the agent was lost in the middle of its reply: it may have acted before it "
        "stopped; check before sending it again"
    ),
}

# --- runtime error codes (contracts/runtime-error-codes-v4.json) --------------

ERROR_CODE_WORDS: Final = {
    "AGENT_DEFAULT_MODEL_NOT_CONFIGURED": gettext_noop(
        "the agent has no default model configured: set one, then send the command again"
    ),
    "COMMAND_EXPIRED": gettext_noop("the command expired before the instance ran it"),
    "CONTRACT_VERSION_MISMATCH": gettext_noop(
        "the instance speaks another contract version: update the instance or the caller"
    ),
    "CONVERSATION_CLEARING": gettext_noop(
        "the conversation was being cleared: wait until it is done, then try again"
    ),
    "HISTORY_GENERATION_MISMATCH": gettext_noop(
        "the conversation history changed meanwhile: reload it before trying again"
    ),
    "IDEMPOTENCY_CONFLICT": gettext_noop(
        "the same idempotency key was used for a different request: nothing new was run"
    ),
    "INSTANCE_EPOCH_MISMATCH": gettext_noop(
        "the instance restarted meanwhile: check its state before trying again"
    ),
    "INSTANCE_OFFLINE": gettext_noop("the instance was offline"),
    "INVALID_EXECUTION_GRANT": gettext_noop("the execution grant was not valid: nothing was run"),
    "INVALID_INVOCATION": gettext_noop("the command was not valid: nothing was run"),
    "METHOD_NOT_SUPPORTED": gettext_noop("the instance does not support this command"),
    "OPERATION_CANCELLED": gettext_noop("the operation was cancelled"),
    "OPERATION_NOT_CANCELLABLE": gettext_noop("the operation could no longer be cancelled"),
    "OPERATION_NOT_FOUND": gettext_noop("the platform does not know this operation"),
    "OUTCOME_UNKNOWN": gettext_noop(
        "the platform cannot prove whether the effect happened; do not replay it"
    ),
    "PROJECTION_BLOCKED": gettext_noop(
        "the effect happened, but the platform cannot bring its own view up to date"
    ),
    "PROJECTION_PENDING": gettext_noop(
        "the effect happened; the platform is still updating its own view"
    ),
    "RUNTIME_EXECUTION_FAILED": gettext_noop("the instance ran the command and it failed"),
    "UNAUTHORIZED_PUBLISHER": gettext_noop("the sender was not allowed to send this command"),
    "UNAUTHORIZED_TARGET": gettext_noop("the command's target was not allowed"),
    "USE_AGENTS_API": gettext_noop(
        "this change goes through the agents API, not a runtime operation"
    ),
}


def certainty_words(certainty: str | None) -> Said:
    return CERTAINTY_WORDS.get(certainty or "") or gettext_noop(
        "certainty %(certainty)s", certainty=certainty or gettext_noop("not recorded")
    )


def retry_words(policy: str | None) -> Said:
    return RETRY_WORDS.get(policy or "") or gettext_noop(
        "retry policy %(policy)s", policy=policy or gettext_noop("not recorded")
    )


def status_words(status: str | None) -> Said:
    return STATUS_WORDS.get(status or "") or (
        verbatim(status) if status else gettext_noop("no status")
    )


def error_code_words(code: str | None) -> Said:
    """The code's meaning, or a plain sentence for a code no contract lists."""
    if not code:
        return Said("")
    known = ERROR_CODE_WORDS.get(code) or ERROR_CODE_WORDS.get(code.strip().upper())
    return known or gettext_noop(
        "error code %(code)s reported by the platform: see the error text", code=code
    )


def reason_words(reason: str | None) -> Said:
    """A sentence for every reason the tables can produce; error codes as such.

    A reason nobody wrote a sentence for (a product producer's own) is still
    said in words, never dropped.
    """
    if not reason:
        return Said("")
    if reason in REASON_WORDS:
        return REASON_WORDS[reason]
    if reason in ERROR_CODE_WORDS or reason.isupper():
        return gettext_noop(
            "error %(code)s: %(meaning)s", code=reason, meaning=error_code_words(reason)
        )
    return gettext_noop("reason given by the producer: %(reason)s", reason=reason)


def what_to_do(status: str | None, certainty: str | None, policy: str | None) -> Said:
    """The one next step, from certainty and retry policy (uncertain wins)."""
    if certainty == "uncertain":
        return gettext_noop(
            "Do not send it again: check with the agent's owner or on the instance whether "
            "the command ran first."
        )
    if status in ("queued", "processing"):
        return gettext_noop("Nothing to do yet; cancel it if it is stuck or no longer wanted.")
    if policy == "safe_to_retry":
        return gettext_noop("Nothing happened: sending it again is safe.")
    if policy == "manual_review":
        return gettext_noop("A person has to look before anything is sent again.")
    return gettext_noop("Nothing to do.")


def summary(
    status: str | None, reason: str | None, certainty: str | None, policy: str | None
) -> Said:
    """Reason, certainty and retry policy in one line (list tooltips)."""
    return gettext_noop(
        "%(what)s; %(certainty)s; %(retry)s.",
        what=reason_words(reason) if reason else status_words(status),
        certainty=certainty_words(certainty),
        retry=retry_words(policy),
    )
