"""The set-based ingest path stores exactly what the one-record path stores.

Random record streams (fixed seeds) with the awkward cases folded in: the same
key many times in one call, older and same-time snapshots, terminal states
trying to go back, messages and events before their parent, A2A history
rewritten, unmapped values and invalid records. Each stream is ingested once
record by record (``ingest_record``) and once in calls of varying size
(``ingest_records``); the answers, the rows, the counters and the audit
entries must be the same.
"""

from __future__ import annotations

import copy
import datetime as dt
import io
import logging
import random
import threading
from typing import Any

import pytest
from django.core.management import call_command

from beeos_console.auditlog.models import AuditEntry
from beeos_console.auditlog.services import Actor
from beeos_console.ingest.services import ingest_record, ingest_records
from beeos_console.mirror.models import StatusCount
from operations import states as op_states
from operations.models import RuntimeOperation, RuntimeOperationEvent
from tasks import states as task_states
from tasks.models import Artifact, Message, Task
from tasks.services.write import ingest_openapi_task

FEEDER = Actor.feeder("batch-feeder")
T0 = dt.datetime(2026, 11, 30, 8, 0, tzinfo=dt.UTC)


def at(minutes: float) -> str:
    return (T0 + dt.timedelta(minutes=minutes)).isoformat().replace("+00:00", "Z")


class Stream:
    """A seeded generator of ingest records over a small pool of keys."""

    def __init__(self, seed: int) -> None:
        self.r = random.Random(seed)

    def pick(self, values: Any) -> Any:
        return self.r.choice(list(values))

    def openapi_task(self) -> dict[str, Any]:
        n = self.r.randrange(6)
        data: dict[str, Any] = {
            "task_id": f"tsk_b{n}",
            "agent_id": f"agt_{n % 2}",
            "caller_id": "usr_ana",
            "status": self.pick([*task_states.OPENAPI_WIRE_VALUES, "paused", "cancelled"]),
            "created_at": at(n),
            "metadata": {"v": self.r.randrange(3)},
        }
        # Same time, older, newer or no explicit timestamp at all.
        when = self.r.choice([None, 10, 10, 20, 30])
        if when is not None:
            data["updated_at"] = at(when)
        return data

    def a2a_task(self) -> dict[str, Any]:
        n = self.r.randrange(3)
        history = [
            {
                "messageId": f"a2a_msg_{n}_{i}",
                "role": self.pick(["user", "agent"]),
                "parts": [{"kind": "text", "text": f"turn {i} v{self.r.randrange(2)}"}],
            }
            for i in range(self.r.randrange(3))
        ]
        return {
            "id": f"a2a_b{n}",
            "contextId": f"ctx_b{n}",
            "status": {
                "state": self.pick([*task_states.A2A_JSON_VALUES, "TASK_STATE_WORKING", "weird"]),
                "timestamp": at(self.r.choice([10, 20, 30])),
                "message": {"parts": [{"kind": "text", "text": "why"}]},
            },
            "target_agent_id": "agt_a2a",
            "caller_agent_id": f"agt_caller_{self.r.randrange(2)}",
            "history": history,
            "artifacts": [
                {"artifactId": f"art_{i}", "name": f"v{self.r.randrange(2)}", "parts": []}
                for i in range(self.r.randrange(2))
            ],
        }

    def message(self) -> dict[str, Any]:
        n = self.r.randrange(8)
        created = self.r.randrange(5)
        return {
            "id": f"msg_b{n}",
            # Mostly an OpenAPI task's channel; sometimes a conversation with no task.
            "conversation_id": self.pick([f"tsk_b{n % 6}", f"tsk_b{n % 6}", "conv_orphan"]),
            "type": self.pick(["agent_reply", "chat_message"]),
            "sender": "agt_0",
            "state": self.pick([*task_states.MESSAGE_STATES, "mystery"]),
            "stop_reason": self.pick(["", *task_states.STOP_REASONS]),
            "body": f"<b>reply {self.r.randrange(3)}</b>",
            "created_at": at(created),
            "updated_at": at(created + self.r.randrange(4)),
        }

    def operation(self) -> dict[str, Any]:
        n = self.r.randrange(4)
        status = self.pick([*op_states.STATUSES, "paused"])
        sequence = self.r.randrange(1, 6)
        data: dict[str, Any] = {
            "id": f"op_b{n}",
            "instanceId": "ins_1",
            "target": {"scope": "agent", "platformAgentId": "agt_0"},
            "method": self.pick(["session/set_model", "mcp/config_set", "agent/restart"]),
            "sequence": str(sequence),
            "createdAt": at(n),
            "updatedAt": at(sequence * self.r.choice([1, 2])),
            "status": status,
            "effectState": self.pick(op_states.EFFECT_STATES),
            "terminal": status in op_states.TERMINAL_STATUSES,
        }
        if status == "failed":
            data["error"] = {
                "code": self.pick(op_states.ERROR_CODES),
                "message": "boom",
                "retryMode": self.pick(op_states.RETRY_MODES),
            }
        if status in ("succeeded", "projection_pending"):
            data["projection"] = {"revision": "1", "state": self.pick(op_states.PROJECTION_STATES)}
        return data

    def event(self) -> dict[str, Any]:
        return {
            "id": str(self.r.randrange(1, 5)),
            "operationId": f"op_b{self.r.randrange(5)}",  # op_b4 never arrives
            "method": "session/set_model",
            "event": {
                "type": self.pick(op_states.EVENT_TYPES),
                "sequence": str(self.r.randrange(1, 4)),
                "recordedAt": at(self.r.randrange(10)),
                "payload": {"phase": self.pick(["a", "b"])},
            },
        }

    def invalid(self) -> Any:
        return self.pick(
            [
                "not an object",
                {"kind": "nonsense", "data": {}},
                {"kind": "openapi_task"},
                {"kind": "openapi_task", "data": {"task_id": "tsk_bad", "status": "running"}},
                {"kind": "message", "data": {"id": "msg_bad", "created_at": "yesterday"}},
                {"kind": "runtime_operation", "data": {"id": "op_bad", "sequence": "-1"}},
                {"kind": "openapi_task", "data": {"task_id": "x\u0000", "status": "running"}},
                {"kind": "openapi_task", "data": {"task_id": "x\ud800", "status": "running"}},
            ]
        )

    def records(self, n: int) -> list[Any]:
        makers = [
            ("openapi_task", self.openapi_task, 5),
            ("a2a_task", self.a2a_task, 2),
            ("message", self.message, 4),
            ("runtime_operation", self.operation, 4),
            ("runtime_operation_event", self.event, 2),
            (None, self.invalid, 1),
        ]
        weights = [w for *_, w in makers]
        out = []
        for _ in range(n):
            if out and self.r.random() < 0.1:  # a redelivery: the very same record again
                out.append(copy.deepcopy(self.r.choice(out)))
                continue
            kind, make, _w = self.r.choices(makers, weights)[0]
            out.append(make() if kind is None else {"kind": kind, "data": make()})
        return out


def stored_state() -> dict[str, Any]:
    """Everything the mirror holds, by natural key, without our own ids and clocks."""
    tasks = {}
    for t in Task.objects.values():
        t.pop("id"), t.pop("first_seen_at"), t.pop("mirrored_at")
        tasks[(t["protocol"], t["task_id"])] = t
    task_keys = dict(Task.objects.values_list("pk", "protocol"))
    task_ids = dict(Task.objects.values_list("pk", "task_id"))
    messages = {}
    for m in Message.objects.values():
        m.pop("id"), m.pop("mirrored_at")
        pk = m.pop("task_id")
        m["task"] = (task_keys[pk], task_ids[pk]) if pk else None
        messages[(m["source"], m["message_id"])] = m
    artifacts = {}
    for a in Artifact.objects.values():
        a.pop("id")
        pk = a.pop("task_id")
        artifacts[(task_ids[pk], a["artifact_id"])] = a
    op_ids = dict(RuntimeOperation.objects.values_list("pk", "operation_id"))
    operations = {}
    for o in RuntimeOperation.objects.values():
        o.pop("id"), o.pop("first_seen_at"), o.pop("mirrored_at")
        operations[o["operation_id"]] = o
    events = {}
    for e in RuntimeOperationEvent.objects.values():
        e.pop("id"), e.pop("mirrored_at")
        pk = e.pop("operation_id")
        e["operation"] = op_ids.get(pk)
        events[(e["operation_id_raw"], e["event_id"])] = e
    counts = {(c.kind, c.status, c.hour): c.count for c in StatusCount.objects.all() if c.count}
    return {
        "tasks": tasks,
        "messages": messages,
        "artifacts": artifacts,
        "operations": operations,
        "events": events,
        "counters": counts,
    }


def audit_since(first_id: int) -> list[tuple[Any, ...]]:
    return list(
        AuditEntry.objects.filter(id__gt=first_id)
        .order_by("id")
        .values_list(
            "actor", "actor_kind", "action", "object_kind", "object_id", "before", "after", "detail"
        )
    )


def forget_mirror() -> None:
    """Empty the mirrored tables (the audit log is append-only: compared by id range)."""
    RuntimeOperationEvent.objects.all().delete()
    RuntimeOperation.objects.all().delete()
    Message.objects.all().delete()
    Artifact.objects.all().delete()
    Task.objects.all().delete()
    StatusCount.objects.all().delete()


def last_audit_id() -> int:
    return AuditEntry.objects.order_by("-id").values_list("id", flat=True).first() or 0


def run_one_by_one(records: list[Any]) -> tuple[list[dict], dict, list]:
    mark = last_audit_id()
    answers = [ingest_record(i, r, FEEDER) for i, r in enumerate(copy.deepcopy(records))]
    return answers, stored_state(), audit_since(mark)


def run_batched(records: list[Any], sizes: list[int]) -> tuple[list[dict], dict, list]:
    mark = last_audit_id()
    answers: list[dict] = []
    start = 0
    for size in sizes:
        call = copy.deepcopy(records[start : start + size])
        for answer in ingest_records(call, FEEDER):
            answers.append({**answer, "index": answer["index"] + start})
        start += size
    return answers, stored_state(), audit_since(mark)


def call_sizes(seed: int, total: int, largest: int) -> list[int]:
    r = random.Random(seed)
    sizes = []
    while sum(sizes) < total:
        sizes.append(min(r.randint(1, largest), total - sum(sizes)))
    return sizes


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("seed", "largest_call"),
    [(1, 400), (2, 400), (3, 40), (4, 7), (5, 400), (6, 120), (7, 1), (8, 400)],
)
def test_batches_store_what_one_by_one_stores(seed, largest_call):
    records = Stream(seed).records(400)
    one_answers, one_state, one_audit = run_one_by_one(records)
    forget_mirror()
    batch_answers, batch_state, batch_audit = run_batched(
        records, call_sizes(seed, len(records), largest_call)
    )

    assert batch_answers == one_answers
    for table in one_state:
        assert batch_state[table] == one_state[table], table
    assert batch_audit == one_audit
    # And the maintained counters are what a full recount gives.
    call_command("rebuild_counters", stdout=io.StringIO())
    assert stored_state()["counters"] == batch_state["counters"]
    # The stream really exercised the rules, not only creates.
    outcomes = {a["result"] for a in one_answers}
    assert {"created", "updated", "unchanged", "stale", "rejected"} <= outcomes
    assert one_state["messages"] and one_state["artifacts"] and one_state["events"]


@pytest.mark.django_db
def test_a_batch_costs_a_fixed_number_of_statements(django_assert_max_num_queries):
    records = Stream(99).records(500)
    ingest_records(copy.deepcopy(records[:50]), FEEDER)
    # Every kind, creates and updates: a few statements per table, not per record.
    with django_assert_max_num_queries(22):
        answers = ingest_records(copy.deepcopy(records), FEEDER)
    assert len(answers) == 500


@pytest.mark.django_db(transaction=True)
def test_a_key_created_meanwhile_replays_the_call_record_by_record(caplog):
    """Another feeder commits a new key while our batch waits on it: answers stay right."""
    newer = {
        "task_id": "tsk_race",
        "agent_id": "agt_0",
        "status": "completed",
        "created_at": at(0),
        "updated_at": at(5),
    }
    older = {**newer, "status": "running", "updated_at": at(1)}
    inserted = threading.Event()

    def other_feeder() -> None:
        from django.db import connection as own
        from django.db import transaction

        try:
            with transaction.atomic():
                ingest_openapi_task(newer, actor=Actor.feeder("other-feeder"))
                inserted.set()
                # Hold the uncommitted row while our batch tries to insert the same key.
                own.cursor().execute("SELECT pg_sleep(0.5)")
        finally:
            own.close()

    thread = threading.Thread(target=other_feeder)
    thread.start()
    assert inserted.wait(10)
    records = [
        {"kind": "openapi_task", "data": older},
        {"kind": "openapi_task", "data": {**older, "task_id": "tsk_calm"}},
    ]
    with caplog.at_level(logging.WARNING, logger="beeos_console.ingest.views"):
        answers = ingest_records(records, FEEDER)
    thread.join()

    assert "replaying it record by record" in caplog.text
    assert [(a["id"], a["result"]) for a in answers] == [
        ("tsk_race", "stale"),
        ("tsk_calm", "created"),
    ]
    assert Task.objects.get(task_id="tsk_race").raw_state == "completed"
    assert sum(StatusCount.objects.filter(kind="task").values_list("count", flat=True)) == 2
