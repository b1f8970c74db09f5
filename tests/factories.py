"""Wire-shaped snapshots for tests, written through the real services."""

from __future__ import annotations

import datetime as dt
import itertools
from typing import Any

from beeos_console.auditlog.services import Actor
from operations.services.write import ingest_runtime_operation, ingest_runtime_operation_event
from tasks.services.write import ingest_a2a_task, ingest_message, ingest_openapi_task

FEEDER = Actor.feeder("test-feeder")
BASE = dt.datetime(2026, 11, 30, 8, 0, tzinfo=dt.UTC)
_ids = itertools.count(1)


def iso(value: dt.datetime) -> str:
    return value.isoformat().replace("+00:00", "Z")


def openapi_task(
    status: str = "running", *, minutes_ago: float = 5, now: dt.datetime | None = None, **extra: Any
) -> dict[str, Any]:
    created = (now or BASE) - dt.timedelta(minutes=minutes_ago)
    n = next(_ids)
    data: dict[str, Any] = {
        "task_id": f"tsk_{n:06d}Qm8ZpL2x",
        "agent_id": "agt_support_triage",
        "caller_id": "usr_ana",
        "status": status,
        "created_at": iso(created),
        "updated_at": iso(created),
    }
    data.update(extra)
    return data


def make_task(status: str = "running", **kwargs: Any):
    return ingest_openapi_task(openapi_task(status, **kwargs), actor=FEEDER).obj


def make_a2a_task(state: str = "TASK_STATE_WORKING", **extra: Any):
    n = next(_ids)
    data: dict[str, Any] = {
        "id": f"a2a_{n:06d}",
        "contextId": f"ctx_{n:06d}",
        "status": {"state": state, "timestamp": iso(BASE)},
        "target_agent_id": "agt_travel",
        "caller_agent_id": "agt_caller",
    }
    data.update(extra)
    return ingest_a2a_task(data, actor=FEEDER).obj


def make_message(task, *, body: str = "Done.", state: str = "completed", **extra: Any):
    n = next(_ids)
    data: dict[str, Any] = {
        "id": f"msg_{n:06d}",
        "conversation_id": task.channel_id,
        "type": "agent_reply",
        "sender": task.agent_id,
        "body": body,
        "state": state,
        "stop_reason": "end_turn",
        "created_at": iso(BASE + dt.timedelta(seconds=n)),
    }
    data.update(extra)
    return ingest_message(data, actor=FEEDER).obj


def operation_snapshot(status: str = "running", **extra: Any) -> dict[str, Any]:
    n = next(_ids)
    data: dict[str, Any] = {
        "id": f"op_{n:06d}",
        "instanceId": "ins_store118",
        "target": {"scope": "agent", "platformAgentId": "agt_support_triage"},
        "method": "session/set_model",
        "capability": "conversation.control",
        "transport": "service",
        "sequence": "3",
        "createdAt": iso(BASE - dt.timedelta(minutes=n % 50)),
        "updatedAt": iso(BASE),
        "status": status,
        "effectState": {"queued": "queued", "running": "running"}.get(status, "committed"),
        "terminal": status not in ("queued", "running", "runtime_committed", "projection_pending"),
    }
    data.update(extra)
    return data


def make_operation(status: str = "running", **extra: Any):
    return ingest_runtime_operation(operation_snapshot(status, **extra), actor=FEEDER).obj


def make_event(op, sequence: int, type_: str = "runtime_operation_progress"):
    n = next(_ids)
    return ingest_runtime_operation_event(
        {
            "id": str(1000 + n),
            "operationId": op.operation_id,
            "method": op.method,
            "event": {
                "type": type_,
                "sequence": str(sequence),
                "recordedAt": iso(BASE + dt.timedelta(seconds=sequence)),
            },
        },
        actor=FEEDER,
    ).obj
