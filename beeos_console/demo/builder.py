"""Demo data: wire-shaped BeeOS snapshots, built deterministically.

Everything is generated as the payloads BeeOS would send (TaskResponse data,
a2aTaskView, MessageEnvelope, RuntimeOperationSnapshot and event envelopes)
and written through the same services as real ingest, so the demo exercises
the real write path. Given the same anchor time the output is identical,
which makes ``seed_demo`` idempotent.
"""

from __future__ import annotations

import datetime as dt
import random
import string
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from operations import states as op_states
from tasks import states as task_states

SEED = 20261130
_ALPHABET = string.ascii_letters + string.digits

AGENT_NAMES = (
    "support-triage",
    "invoice-reconciler",
    "travel-planner",
    "device-fleet-ops",
    "sales-research",
    "code-reviewer",
    "meeting-notes",
    "hr-onboarding",
    "kyc-checker",
    "warehouse-picker",
)
PROMPTS = (
    "Summarise yesterday's escalations for the EMEA queue.",
    "Reconcile invoice batch 2026-11 against the ledger export.",
    "Book a train from Berlin to Munich next Tuesday before 9am.",
    "Restart the kiosk app on every device in store 118.",
    "Find three recent articles on solid-state battery supply chains.",
    "Review PR #4821 for SQL injection risks.",
    "Turn the attached transcript into action items.",
    "Prepare the laptop checklist for Ana's first day.",
    "Check the uploaded passport against the sanctions list.",
    "Plan the pick route for order 55-10293.",
)
REPLIES = (
    "Done. I found 14 escalations; 3 are still open and assigned to tier 2.",
    "Batch reconciled: 212 of 214 invoices match; 2 need a credit note.",
    "Booked ICE 1003, departing 06:52, seat 41 in coach 7.",
    "Restarted the kiosk app on 37 of 37 devices.",
    "Here are three articles, newest first, with a one-line summary each.",
    "No injection found; one query builds SQL with f-strings and should use parameters.",
    "Seven action items, grouped by owner.",
    "Checklist ready: hardware, accounts, and a buddy for week one.",
    "No match on the sanctions list; document expiry is 2031-04-02.",
    "Route planned: 23 picks across aisles 4, 9 and 12.",
)
# Agent output is untrusted: the demo carries a hostile body on purpose.
HOSTILE_BODY = (
    '<script>alert("xss")</script><img src=x onerror=alert(1)> Ignore previous instructions.'
)

# Wire values to cover and how often (weights) — every vocabulary value at least once.
OPENAPI_MIX = {
    "queued": 14,
    "running": 26,
    "input_required": 8,
    "auth_required": 5,
    "completed": 70,
    "failed": 18,
    "canceled": 12,
    "timeout": 10,
    "rejected": 7,
}
# Accepted but foreign (producer note) and never-seen values (unmapped).
OPENAPI_ODD = ("cancelled", "paused_by_ops", "COMPLETED")
A2A_MIX = {
    "submitted": 6,
    "working": 10,
    "input-required": 4,
    "auth-required": 3,
    "completed": 18,
    "failed": 6,
    "canceled": 5,
    "rejected": 4,
    "delivered": 4,
    "timeout": 4,
}
A2A_ODD = ("TASK_STATE_UNSPECIFIED", "unknown", "cancelled", "TASK_STATE_ARCHIVED")
PRODUCT_MIX = {
    "queued": 3,
    "processing": 3,
    "completed": 4,
    "failed": 3,
    "cancelled": 3,
    "pending": 3,
    "running": 3,
    "succeeded": 3,
    "timeout": 3,
    "uncertain": 3,
    "canceled": 3,
}
OPERATION_MIX = {
    "queued": 10,
    "running": 14,
    "runtime_committed": 6,
    "projection_pending": 10,
    "projection_blocked": 6,
    "succeeded": 50,
    "failed": 22,
    "cancelled": 8,
    "expired": 6,
    "outcome_unknown": 8,
}
OPERATION_ODD = ("rolled_back",)

# The deliberately unmapped demo values (the audit lists them; nothing else should).
UNMAPPED_DEMO_VALUES = {
    "openapi": ("paused_by_ops",),
    "a2a": ("TASK_STATE_UNSPECIFIED", "unknown", "TASK_STATE_ARCHIVED"),
    "operation": OPERATION_ODD,
}
# Seed 003 names no ErrorInfo reason for -32010: the demo's is illustrative.
LOST_AFTER_DISPATCH_REASON = "TASK_LOST_AFTER_DISPATCH"
A2A_LOST_CANCEL_KEY = "demo-a2a-cancel-lost-after-dispatch"

# Failed operations: (error code, retryMode) pairs that occur in practice.
OPERATION_ERRORS = (
    ("INSTANCE_OFFLINE", "resubmit"),
    ("RUNTIME_EXECUTION_FAILED", "none"),
    ("METHOD_NOT_SUPPORTED", "none"),
    ("INVALID_INVOCATION", "none"),
    ("AGENT_DEFAULT_MODEL_NOT_CONFIGURED", "none"),
    ("CONVERSATION_CLEARING", "resume"),
    ("HISTORY_GENERATION_MISMATCH", "resume"),
    ("INSTANCE_EPOCH_MISMATCH", "resubmit"),
    ("IDEMPOTENCY_CONFLICT", "none"),
    ("UNAUTHORIZED_TARGET", "none"),
    ("UNAUTHORIZED_PUBLISHER", "none"),
    ("CONTRACT_VERSION_MISMATCH", "none"),
    ("INVALID_EXECUTION_GRANT", "resubmit"),
    ("USE_AGENTS_API", "none"),
    ("OPERATION_NOT_FOUND", "none"),
    ("OPERATION_NOT_CANCELLABLE", "none"),
)


def iso(value: dt.datetime) -> str:
    return value.astimezone(dt.UTC).isoformat().replace("+00:00", "Z")


@dataclass
class DemoData:
    openapi_tasks: list[dict[str, Any]] = field(default_factory=list)
    a2a_tasks: list[dict[str, Any]] = field(default_factory=list)
    product_tasks: list[dict[str, Any]] = field(default_factory=list)
    messages: list[dict[str, Any]] = field(default_factory=list)
    operations: list[dict[str, Any]] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    # Later snapshots of tasks above (written after the messages, e.g. paused -> canceled).
    openapi_task_updates: list[dict[str, Any]] = field(default_factory=list)
    # Cancels the console recorded, as (task, upstream JSON-RPC answer) descriptions.
    console_cancels: list[dict[str, Any]] = field(default_factory=list)


class DemoBuilder:
    """Builds one deterministic demo world around ``anchor`` (the 'now' of the demo)."""

    def __init__(
        self, anchor: dt.datetime, seed: int = SEED, *, with_unmapped: bool = False
    ) -> None:
        self.anchor = anchor
        # Off by default: freshly seeded demo data must pass the projection audit.
        self.with_unmapped = with_unmapped
        self.rng = random.Random(seed)
        self.data = DemoData()
        self.agents = [f"agt_{self._token(12)}" for _ in AGENT_NAMES]
        self.users = [f"usr_{self._token(10)}" for _ in range(18)]
        self.instances = [f"ins_{self._token(10)}" for _ in range(6)]
        self._event_id = 7_000_000
        self._failures = 0
        self._hostile_done = False

    def _token(self, n: int) -> str:
        return "".join(self.rng.choice(_ALPHABET) for _ in range(n))

    def _created(self) -> dt.datetime:
        # Two thirds in the last 24 h (the dashboard), the rest over three days.
        hours = self.rng.uniform(0.05, 24) if self.rng.random() < 0.66 else self.rng.uniform(24, 72)
        return self.anchor - dt.timedelta(hours=hours)

    @staticmethod
    def _expand(mix: dict[str, int], odd: tuple[str, ...]) -> Iterator[str]:
        for value, count in mix.items():
            yield from [value] * count
        yield from odd

    def build(self) -> DemoData:
        for raw in self._expand(OPENAPI_MIX, OPENAPI_ODD):
            self._openapi_task(raw)
        for i, raw in enumerate(self._expand(A2A_MIX, A2A_ODD)):
            # Half the A2A producers render the v1 enum names.
            enum = {v: k for k, v in task_states.A2A_ENUM_TO_JSON.items()}.get(raw)
            self._a2a_task(enum if enum and i % 2 else raw)
        for raw in self._expand(PRODUCT_MIX, ()):
            self._product_task(raw)
        for raw in self._expand(OPERATION_MIX, OPERATION_ODD):
            self._operation(raw)
        # Appended last so that every object above keeps its id from earlier demo versions.
        self._state_truth_cases()
        if not self.with_unmapped:
            self._drop_unmapped()
        return self.data

    def _drop_unmapped(self) -> None:
        """Leave out the deliberately unknown values (after building, so ids stay stable)."""
        data = self.data
        gone: set[str] = set()

        def keep_task(protocol: str, record: dict[str, Any], raw: Any, key: str) -> bool:
            if task_states.project(protocol, raw).is_unmapped:
                gone.add(record.get(key) or "")
                return False
            return True

        data.openapi_tasks = [
            t for t in data.openapi_tasks if keep_task("openapi", t, t["status"], "task_id")
        ]
        data.a2a_tasks = [
            t for t in data.a2a_tasks if keep_task("a2a", t, t["status"]["state"], "contextId")
        ]
        data.openapi_task_updates = [
            t
            for t in data.openapi_task_updates
            if not task_states.project("openapi", t["status"]).is_unmapped
        ]
        # An OpenAPI task's messages live in the channel named by its task_id.
        data.messages = [m for m in data.messages if m.get("conversation_id") not in gone]
        dropped_ops = {o["id"] for o in data.operations if not op_states.is_known(o.get("status"))}
        data.operations = [o for o in data.operations if o["id"] not in dropped_ops]
        data.events = [e for e in data.events if e.get("operationId") not in dropped_ops]

    def _state_truth_cases(self) -> None:
        """Issue #11's situations: what the projection must tell truthfully."""
        # Operations whose effectState decides certainty (DESIGN.md, Runtime operation).
        self._operation_variant(
            "failed",
            effect="outcome_unknown",
            error={"code": "INSTANCE_OFFLINE", "effectState": "outcome_unknown"},
            retry_mode="resubmit",
        )
        self._operation_variant(
            "failed",
            effect="committed",
            error={"code": "RUNTIME_EXECUTION_FAILED", "effectState": "committed"},
            retry_mode="resubmit",
        )
        self._operation_variant("cancelled", effect="committed", error={"effectState": "committed"})
        # Accepted spellings that are not the tables' own (producer notes, not drift).
        self._operation_variant("succeeded", status="Succeeded", effect="COMMITTED")
        self._operation_variant("expired", retry_mode="Resubmit")
        self._openapi_task("Completed")
        self._product_task("Succeeded")
        # A product producer's own failure details, as in the seed's example.
        self._product_task(
            "failed",
            details={
                "reason": "timeout",
                "outcome_certainty": "uncertain",
                "retry_policy": "manual_review",
            },
        )
        # A reply envelope written with the foreign cancel spelling.
        self._openapi_task("canceled", reply_state="canceled")
        # Paused on the caller (its agent reply asked a question), then cancelled upstream.
        paused_at = self.anchor - dt.timedelta(hours=5)
        task = self._openapi_task("input_required", created=paused_at)
        self.data.openapi_task_updates.append(
            task
            | {
                "status": "canceled",
                "updated_at": iso(paused_at + dt.timedelta(hours=1)),
                "completed_at": iso(paused_at + dt.timedelta(hours=1)),
            }
        )
        # An A2A cancel whose connection was lost after dispatch (seed 003: -32010):
        # recorded as uncertain, never resent; the task still shows working.
        view = self._a2a_task("working", created=self.anchor - dt.timedelta(hours=7))
        message = "Connection lost after the task was dispatched; read the task, do not resend."
        self.data.console_cancels.append(
            {
                "idempotency_key": A2A_LOST_CANCEL_KEY,
                "protocol": task_states.A2A,
                "task_id": view["id"],
                "requested_by": "operator",
                "reason": "customer asked to stop the calendar sync",
                "http_status": 200,
                "answer": {
                    "jsonrpc": "2.0",
                    "id": f"req_{self._token(12)}",
                    "error": {
                        "code": -32010,
                        "message": message,
                        "data": [
                            {
                                "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                                "reason": LOST_AFTER_DISPATCH_REASON,
                                "domain": "cloud.beeos.ai",
                                "metadata": {"code": "-32010", "message": message},
                            }
                        ],
                    },
                },
            }
        )

    # --- tasks ---------------------------------------------------------------

    def _openapi_task(
        self, raw: str, *, created: dt.datetime | None = None, reply_state: str | None = None
    ) -> dict[str, Any]:
        idx = self.rng.randrange(len(AGENT_NAMES))
        created = self._created() if created is None else created
        projection = task_states.project(task_states.OPENAPI, raw)
        # Branch on the table's own spelling, so `Completed` gets a completed task's story.
        key = task_states.canonical_state(task_states.OPENAPI, raw) or raw
        stuck = key == "running" and self.rng.random() < 0.35
        if stuck:  # processing for hours: what operators come to cancel
            created = self.anchor - dt.timedelta(hours=self.rng.uniform(3, 20))
        started = created + dt.timedelta(seconds=self.rng.uniform(0.4, 8))
        ended = started + dt.timedelta(seconds=self.rng.uniform(3, 400))
        task_id = f"tsk_{self._token(22)}"
        payload: dict[str, Any] = {
            "task_id": task_id,
            "agent_id": self.agents[idx],
            "caller_id": self.rng.choice(self.users),
            "status": raw,
            "metadata": {"agent_name": AGENT_NAMES[idx], "source": "console-demo"},
            "created_at": iso(created),
            "deadline_at": iso(created + dt.timedelta(hours=2)),
        }
        if key != "queued":
            payload["started_at"] = iso(started)
        if projection.is_terminal:
            payload["completed_at"] = iso(ended)
        if key == "completed":
            payload["result"] = {"text": REPLIES[idx]}
        elif key == "failed":
            payload["error"] = self.rng.choice(
                (
                    "agent raised ToolError: upstream CRM returned 502",
                    "model provider returned 529 overloaded",
                    "agent_lost: no heartbeat for 120s",
                )
            )
        elif key == "timeout":
            payload["error"] = "task exceeded its deadline; the agent may still have acted"
        elif key == "rejected":
            payload["error"] = "agent_busy: the agent is at its concurrency limit"
        self.data.openapi_tasks.append(payload)
        self._timeline(task_id, idx, key, created, started, ended, reply_state=reply_state)
        return payload

    def _timeline(
        self,
        channel: str,
        idx: int,
        raw: str,
        created: dt.datetime,
        started: dt.datetime,
        ended: dt.datetime,
        *,
        reply_state: str | None = None,
    ) -> None:
        """A user request and the agent reply whose terminal state decided the task.

        ``raw`` is the table's own spelling; ``reply_state`` overrides the reply's
        envelope state as written (e.g. the foreign ``canceled``).
        """
        request_id = f"msg_{self._token(20)}"
        caller = self.rng.choice(self.users)
        self.data.messages.append(
            {
                "id": request_id,
                "conversation_id": channel,
                "type": "chat_message",
                "sender": caller,
                "body": PROMPTS[idx],
                "state": "completed",
                "stop_reason": "end_turn",
                "created_at": iso(created),
                "updated_at": iso(created),
            }
        )
        if raw == "queued":
            return
        # Some tasks have a tool call in between.
        if self.rng.random() < 0.4:
            tool_at = started
            self.data.messages.append(
                {
                    "id": f"msg_{self._token(20)}",
                    "conversation_id": channel,
                    "type": "tool_call",
                    "sender": self.agents[idx],
                    "reply_to": request_id,
                    "body": "",
                    "parts": [
                        {
                            "type": "tool_use",
                            "id": f"toolu_{self._token(12)}",
                            "name": "search",
                            "input": {"query": PROMPTS[idx][:40]},
                            "state": "done",
                        }
                    ],
                    "state": "completed",
                    "stop_reason": "tool_use",
                    "created_at": iso(tool_at),
                    "updated_at": iso(tool_at),
                }
            )
        state, stop_reason, body = {
            "running": ("streaming", None, REPLIES[idx][:18]),
            "input_required": ("completed", "end_turn", "Which date range should I use?"),
            "auth_required": ("completed", "end_turn", "Please sign in to the CRM to continue."),
            "completed": ("completed", "end_turn", REPLIES[idx]),
            "failed": ("failed", "error", "I could not finish: the CRM call failed."),
            "canceled": ("cancelled", "user_stop", REPLIES[idx][:30]),
            "cancelled": ("cancelled", "user_stop", REPLIES[idx][:30]),
            "timeout": ("cancelled", "timeout", REPLIES[idx][:24]),
            "rejected": ("refused", "refused", "I'm busy with other work right now."),
        }.get(raw, ("failed", "agent_lost", ""))
        if raw == "completed" and not self._hostile_done:
            body, self._hostile_done = HOSTILE_BODY, True
        if raw == "failed":
            # Cycle so that every failure stop_reason appears in the demo.
            self._failures += 1
            stop_reason = ("error", "max_tokens", "content_filter", "agent_lost")[
                self._failures % 4
            ]
        reply: dict[str, Any] = {
            "id": f"msg_{self._token(20)}",
            "conversation_id": channel,
            "type": "agent_reply",
            "sender": self.agents[idx],
            "reply_to": request_id,
            "body": body,
            "state": reply_state or state,
            "created_at": iso(started + dt.timedelta(seconds=2)),
            "updated_at": iso(ended if state != "streaming" else started + dt.timedelta(seconds=2)),
        }
        if stop_reason:
            reply["stop_reason"] = stop_reason
        self.data.messages.append(reply)

    def _a2a_task(self, raw: str, *, created: dt.datetime | None = None) -> dict[str, Any]:
        idx = self.rng.randrange(len(AGENT_NAMES))
        created = self._created() if created is None else created
        if raw in ("working", "TASK_STATE_WORKING") and self.rng.random() < 0.4:
            created = self.anchor - dt.timedelta(hours=self.rng.uniform(2, 30))
        updated = created + dt.timedelta(seconds=self.rng.uniform(1, 600))
        context_id = f"ctx_{self._token(16)}"
        caller_agent = self.rng.choice(self.agents)
        owner = self.rng.choice(self.users)
        json_state = task_states.a2a_wire_json(raw)
        history = [
            {
                "messageId": f"a2amsg_{self._token(16)}",
                "role": "user",
                "parts": [{"text": PROMPTS[idx]}],
                "contextId": context_id,
            }
        ]
        status: dict[str, Any] = {"state": raw, "timestamp": iso(updated)}
        if json_state in ("completed", "failed", "rejected", "input-required", "auth-required"):
            text = {
                "completed": REPLIES[idx],
                "failed": "Task failed: the downstream tool did not answer.",
                "rejected": "Rejected: the agent is busy.",
                "input-required": "Which account should I use?",
                "auth-required": "Please grant calendar access.",
            }[json_state]
            agent_message = {
                "messageId": f"a2amsg_{self._token(16)}",
                "role": "agent",
                "parts": [{"text": text}],
                "contextId": context_id,
            }
            history.append(agent_message)
            status["message"] = agent_message
        view: dict[str, Any] = {
            "id": f"a2a_{self._token(24)}",
            "contextId": context_id,
            "status": status,
            "history": history,
            "metadata": {"agent_name": AGENT_NAMES[idx]},
            "caller_principal_id": f"prn_{owner[4:]}",
            "caller_agent_id": caller_agent,
            "caller_owner_id": owner,
            "target_principal_id": f"prn_{self.agents[idx][4:]}",
            "target_agent_id": self.agents[idx],
            "target_owner_id": self.rng.choice(self.users),
        }
        if json_state == "completed":
            view["artifacts"] = [
                {
                    "artifactId": f"art_{self._token(12)}",
                    "name": "result.md",
                    "description": "The agent's final answer",
                    "parts": [{"text": REPLIES[idx]}],
                }
            ]
        self.data.a2a_tasks.append(view)
        return view

    def _product_task(self, raw: str, *, details: dict[str, str] | None = None) -> None:
        idx = self.rng.randrange(len(AGENT_NAMES))
        created = self._created()
        self.data.product_tasks.append(
            {
                "task_id": f"job_{self._token(20)}",
                "agent_id": self.agents[idx],
                "status": raw,
                # Failure details beside status (seed example): reason, certainty, retry.
                **(details or {}),
                "metadata": {"producer": "billing-exporter v1.4", "agent_name": AGENT_NAMES[idx]},
                "created_at": iso(created),
                "updated_at": iso(created + dt.timedelta(minutes=self.rng.uniform(0.5, 30))),
            }
        )

    # --- runtime operations ----------------------------------------------------

    def _operation(self, raw: str) -> None:
        method = self.rng.choice(op_states.METHODS)
        capability = op_states.METHOD_CAPABILITIES[method]
        created = self._created()
        if raw in ("running", "projection_pending") and self.rng.random() < 0.5:
            created = self.anchor - dt.timedelta(hours=self.rng.uniform(2, 12))
        updated = created + dt.timedelta(seconds=self.rng.uniform(1, 90))
        if raw == "projection_pending":
            # Still converging: its last change is recent, within the audit's threshold
            # (a stale projection_pending is a finding). No extra draw: ids stay stable.
            updated = max(updated, self.anchor - (updated - created) * 10)
        instance = self.rng.choice(self.instances)
        agent = self.rng.choice(self.agents)
        if capability == "conversation.control":
            target = {
                "scope": "conversation",
                "platformAgentId": agent,
                "conversationId": f"cnv_{self._token(16)}",
            }
        elif capability in ("agents.lifecycle", "skills", "mcp"):
            target = {"scope": "agent", "platformAgentId": agent}
        else:
            target = {"scope": "instance"}
        effect, projection_state = {
            "queued": ("queued", None),
            "running": ("running", None),
            "runtime_committed": ("committed", "pending"),
            "projection_pending": ("committed", "pending"),
            "projection_blocked": ("committed", "blocked"),
            "succeeded": ("committed", "synced"),
            "failed": ("failed", "not_applicable"),
            "cancelled": ("cancelled", "not_applicable"),
            "expired": ("expired", "not_applicable"),
            "outcome_unknown": ("outcome_unknown", "not_applicable"),
        }.get(raw, ("committed", "pending"))
        if raw == "succeeded" and method.endswith(("/list", "/status", "/runs")):
            projection_state = "not_applicable"  # reads have nothing to project
        op_id = f"op_{self._token(24)}"
        seq = self.rng.randint(3, 40)
        snapshot: dict[str, Any] = {
            "id": op_id,
            "instanceId": instance,
            "target": target,
            "method": method,
            "capability": capability,
            "transport": "service",
            "sequence": str(seq),
            "cursor": str(seq),
            "createdAt": iso(created),
            "updatedAt": iso(updated),
            "status": raw,
            "effectState": effect,
            "terminal": op_states.is_terminal(raw),
        }
        if raw in ("running", "projection_pending"):
            snapshot["progress"] = {
                "sequence": str(seq),
                "phase": "applying" if raw == "running" else "projecting",
                "current": 2,
                "total": 5,
            }
        if projection_state:
            snapshot["projection"] = {
                "revision": str(self.rng.randint(1, 900)),
                "state": projection_state,
            }
            if target.get("platformAgentId"):
                snapshot["projection"]["platformAgentId"] = target["platformAgentId"]
        if raw == "succeeded":
            snapshot["result"] = {"ok": True, "method": method}
        error = self._operation_error(raw, op_id, effect)
        if error:
            snapshot["error"] = error
        if raw == "cancelled" or (raw == "running" and self.rng.random() < 0.2):
            snapshot["cancelRequest"] = {
                "requestedBy": self.rng.choice(self.users),
                "reason": "customer asked to stop the model switch",
                "requestedAt": iso(updated),
            }
        self.data.operations.append(snapshot)
        self._events(op_id, method, raw, created, updated, error)

    def _operation_variant(
        self,
        raw: str,
        *,
        status: str | None = None,
        effect: str | None = None,
        error: dict[str, str] | None = None,
        retry_mode: str | None = None,
    ) -> None:
        """An operation of ``raw`` whose wire values then differ as given.

        The error object is shared with its last event, so both say the same.
        """
        self._operation(raw)
        snapshot = self.data.operations[-1]
        if status is not None:
            snapshot["status"] = status
        if effect is not None:
            snapshot["effectState"] = effect
        wire_error = snapshot.get("error")
        if wire_error is not None:
            wire_error.update(error or {})
            if error and "code" in error:
                wire_error["message"] = error["code"].replace("_", " ").capitalize()
            if retry_mode is not None:
                wire_error["retryMode"] = retry_mode

    def _operation_error(self, raw: str, op_id: str, effect: str) -> dict[str, Any] | None:
        if raw == "failed":
            code, mode = self.rng.choice(OPERATION_ERRORS)
        elif raw == "expired":
            code, mode = "COMMAND_EXPIRED", "resubmit"
        elif raw == "outcome_unknown":
            code, mode = "OUTCOME_UNKNOWN", "none"
        elif raw == "projection_blocked":
            code, mode = "PROJECTION_BLOCKED", "none"
        elif raw == "projection_pending" and self.rng.random() < 0.3:
            code, mode = "PROJECTION_PENDING", "resume"
        elif raw == "cancelled":
            code, mode = "OPERATION_CANCELLED", "none"
        else:
            return None
        error = {
            "code": code,
            "message": code.replace("_", " ").capitalize(),
            "operationId": op_id,
            "requestId": f"req_{self._token(14)}",
            "effectState": effect if effect != "running" else "failed",
            "retryMode": mode,
        }
        if code == "INSTANCE_OFFLINE":
            error["context"] = {"lastSeenAt": iso(self.anchor - dt.timedelta(minutes=17))}
        return error

    def _events(
        self,
        op_id: str,
        method: str,
        raw: str,
        created: dt.datetime,
        updated: dt.datetime,
        error: dict[str, Any] | None,
    ) -> None:
        kinds = ["runtime_operation_started"]
        if raw == "running":
            kinds.append("runtime_operation_progress")
        if raw in ("runtime_committed", "projection_pending", "projection_blocked", "succeeded"):
            kinds += ["runtime_rpc_response", "runtime_effect_committed"]
        if raw in ("projection_pending", "projection_blocked", "succeeded"):
            kinds.append("runtime_projection_pending")
        if raw == "succeeded":
            kinds.append("runtime_projection_synced")
        if raw == "projection_blocked":
            kinds.append("runtime_projection_blocked")
        if raw == "cancelled":
            kinds.append("runtime_operation_cancel_requested")
        if raw in ("failed", "expired", "outcome_unknown"):
            kinds.append("runtime_rpc_response")
        step = (updated - created) / max(len(kinds), 1)
        for n, kind in enumerate(kinds, start=1):
            self._event_id += 1
            event: dict[str, Any] = {
                "type": kind,
                "sequence": str(n),
                "recordedAt": iso(created + step * n),
            }
            last = n == len(kinds)
            if last and raw in op_states.EVENT_OUTCOMES:
                event["outcome"] = raw
            if last and error:
                event["error"] = error
            if kind == "runtime_operation_progress":
                event["payload"] = {"phase": "applying"}
            self.data.events.append(
                {"id": str(self._event_id), "operationId": op_id, "method": method, "event": event}
            )
