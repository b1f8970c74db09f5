"""The set-based projection audit finds what the per-row reference finds, in the same order.

``projection_audit.sweep`` (set-based, sweep.py) and ``sweep_per_row`` (every
row through Python, the definition) run on the same data with the same chunk
size; every finding the CSV export would stream, and the whole report, must
be equal: same categories, same rows, same words, same order.
"""

from __future__ import annotations

import datetime as dt
import functools
import io
from typing import Any

import pytest
from django.core.management import call_command
from django.db import connection
from django.db.backends.signals import connection_created
from django.utils import timezone
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from beeos_console.auditlog.services import Actor
from beeos_console.mirror.states import DISPLAY_STATUSES, PROJECTION_VERSION
from beeos_console.projection import audit as projection_audit
from operations.models import RuntimeOperation
from tasks import states as task_states
from tasks.models import Message, Task
from tasks.services.cancel import cancel_task
from tasks.services.write import ingest_openapi_task, ingest_product_task

from .factories import (
    FEEDER,
    iso,
    make_a2a_task,
    make_message,
    make_operation,
    make_task,
    openapi_task,
)

pytestmark = pytest.mark.django_db

Finding = tuple[str, dict[str, Any]]


def run(sweep: Any, chunk: int) -> tuple[list[Finding], dict[str, Any]]:
    stream: list[Finding] = []
    report = sweep(
        chunk=chunk,
        listener=lambda category, finding: stream.append((category, finding)),
        check_audit_chain=True,
    )
    data = report.to_json()
    del data["started_at"], data["finished_at"]
    return stream, data


def assert_same_findings(chunks: tuple[int, ...] = (7, 2000, 50_000)) -> list[Finding]:
    for chunk in chunks:
        reference = run(projection_audit.sweep_per_row, chunk)
        assert run(projection_audit.sweep, chunk) == reference, f"chunk {chunk}"
    return reference[0]


def drift_of_every_kind() -> None:
    """One row (at least) behind every finding the audit knows."""
    now = timezone.now()
    # Stored projections that lie, and rows stamped by an older table.
    lying = make_task("timeout")
    Task.objects.filter(pk=lying.pk).update(status="completed", outcome_certainty="certain")
    Task.objects.filter(pk=make_task("running").pk).update(projection_version=1)
    reply = make_message(make_task("failed"), state="failed", stop_reason="max_tokens")
    Message.objects.filter(pk=reply.pk).update(reason="error")
    old = make_message(make_task("completed"))
    Message.objects.filter(pk=old.pk).update(projection_version=PROJECTION_VERSION - 1)
    op = make_operation("outcome_unknown")
    RuntimeOperation.objects.filter(pk=op.pk).update(outcome_certainty="certain")
    RuntimeOperation.objects.filter(pk=make_operation("succeeded").pk).update(projection_version=1)
    # A product producer's details: kept, and a stored projection that drops them.
    product = ingest_product_task(
        {
            "task_id": "job_export_7",
            "agent_id": "agt_billing",
            "status": "failed",
            "reason": "timeout",
            "outcome_certainty": "uncertain",
            "retry_policy": "manual_review",
            "created_at": now.isoformat(),
        },
        actor=FEEDER,
    ).obj
    Task.objects.filter(pk=product.pk).update(reason="error", outcome_certainty="certain")
    # Unmapped values: task, message, operation status and both effectStates.
    make_task("paused_by_ops")
    weird = make_message(make_task("running"), state="streaming", stop_reason="")
    Message.objects.filter(pk=weird.pk).update(state="exploded")
    make_operation("archived")
    make_operation("failed", effectState="half_applied")
    make_operation(
        "failed",
        effectState="failed",
        error={"code": "X", "message": "x", "effectState": "vanished", "retryMode": "none"},
    )
    # Broken invariants of the evidence rule.
    make_message(make_task("completed"), state="failed", stop_reason="error")
    make_message(make_task("completed"), state="streaming", stop_reason="")
    make_message(make_task("completed"), type="chat_message", state="completed")
    make_task("completed")  # missing evidence
    make_a2a_task("TASK_STATE_COMPLETED")
    # A reply with no created_at counts as written now.
    undated = make_task("failed")
    make_message(undated, state="failed", stop_reason="error")
    late = make_message(undated)
    Message.objects.filter(pk=late.pk).update(created_at=None)
    # Operations' invariants.
    make_operation("succeeded", projection={"revision": "3", "state": "pending"})
    stale = make_operation("projection_pending")
    RuntimeOperation.objects.filter(pk=stale.pk).update(updated_at=now - dt.timedelta(hours=2))
    make_operation("failed", terminal=False, effectState="failed")
    # Producer notes.
    make_task("Completed")
    make_message(make_task("canceled"), state="canceled", stop_reason="user_stop")
    make_operation(
        "Succeeded", effectState="COMMITTED", projection={"revision": "2", "state": "synced"}
    )
    # Stamped in the future (clock skew), one of each kind.
    ahead = now + dt.timedelta(hours=3, minutes=30)
    Task.objects.filter(pk=make_task("running").pk).update(updated_at=ahead)
    Message.objects.filter(pk=make_message(make_task("running")).pk).update(updated_at=ahead)
    RuntimeOperation.objects.filter(pk=make_operation("running").pk).update(updated_at=ahead)
    # Suspects: a reply that paused the task, the console's own cancel.
    paused = make_task("input_required", now=now - dt.timedelta(hours=2))
    make_message(paused, body="Which account?", created_at=iso(now - dt.timedelta(hours=1)))
    ingest_openapi_task(
        openapi_task(
            "timeout", task_id=paused.task_id, updated_at=iso(now - dt.timedelta(minutes=30))
        ),
        actor=FEEDER,
    )
    stopped = make_task("running", now=now - dt.timedelta(hours=1))
    make_message(
        stopped,
        state="failed",
        stop_reason="error",
        created_at=iso(now - dt.timedelta(minutes=30)),
    )
    assert cancel_task("openapi", stopped.task_id, actor=Actor("olga"), reason="stuck").ok
    contradicted = make_task("canceled")
    make_message(contradicted, state="completed", created_at=iso(now + dt.timedelta(hours=1)))


def test_seeded_demo_with_every_kind_of_drift():
    call_command("seed_demo", "--no-users", "--with-unmapped", stdout=io.StringIO())
    drift_of_every_kind()
    # The audit log's chain, broken past the app (the owner role can).
    with connection.cursor() as cursor:
        cursor.execute("ALTER TABLE console_auditentry DISABLE TRIGGER USER")
        cursor.execute("UPDATE console_auditentry SET actor = 'mallory' WHERE seq = 1")
        cursor.execute("ALTER TABLE console_auditentry ENABLE TRIGGER USER")
    stream = assert_same_findings()
    found = {category for category, _finding in stream}
    assert found == set(projection_audit.FAILING) | set(projection_audit.INFORMATIONAL)


@pytest.mark.django_db(transaction=True)
def test_two_reading_sessions_find_the_same():
    """Outside a transaction the ranges are read by two sessions side by side."""
    call_command("seed_demo", "--no-users", "--with-unmapped", stdout=io.StringIO())
    drift_of_every_kind()
    opened: list[object] = []

    def count(sender: object, connection: object, **kwargs: object) -> None:
        opened.append(connection)

    for chunk in (7, 50_000):
        reference = run(projection_audit.sweep_per_row, chunk)
        connection_created.connect(count)
        try:
            both = run(functools.partial(projection_audit.sweep, workers=2), chunk)
        finally:
            connection_created.disconnect(count)
        assert both == reference, f"chunk {chunk}"
    assert len(opened) == 4  # two reading sessions per sweep, closed afterwards
    assert all(conn.connection is None for conn in opened)


def test_rows_written_after_the_key_tables_are_judged_row_by_row():
    """A raw tuple the key tables do not know (written mid-sweep) is still audited."""
    make_task("completed")
    written: list[str] = []

    def meanwhile(line: str) -> None:
        if line.startswith("distinct raw tuples") and not written:
            task = make_task("mystery_state")
            done = make_task("completed")
            make_message(done, state="Completed", stop_reason="no_such_reason")
            make_operation("hibernating")
            written.append(task.task_id)

    report = projection_audit.sweep(progress=meanwhile)
    assert written
    after = projection_audit.sweep_per_row()
    assert report.to_json()["categories"] == after.to_json()["categories"]
    assert [g["raw_value"] for g in report.to_json()["unmapped_groups"]] == [
        "mystery_state",
        "hibernating",
    ]


def test_progress_on_the_terminal_and_no_key_table_left_behind():
    for _ in range(5):
        make_task("running")
    lines: list[str] = []
    projection_audit.sweep(progress=lines.append, chunk=2)
    assert lines[0] == "distinct raw tuples, projected once: tasks 1, messages 0, operations 0"
    assert [line for line in lines if line.startswith("tasks")] == [
        "tasks: 2 scanned",
        "tasks: 4 scanned",
        "tasks: 5 scanned",
    ]
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_class WHERE relname LIKE 'audit_sweep_%%'")
        assert cursor.fetchone()[0] == 0


# --- a generated mix ------------------------------------------------------------------------

NOW = timezone.now().replace(microsecond=0)
TASK_STATES = {
    task_states.OPENAPI: [
        "queued", "running", "input_required", "completed", "Completed", "failed", "canceled",
        "cancelled", "timeout", "rejected", " completed", "paused",
    ],
    task_states.A2A: [
        "submitted", "working", "TASK_STATE_COMPLETED", "completed", "failed", "canceled",
        "TASK_STATE_CANCELLED", "input-required", "unknown", "delivered",
    ],
    task_states.PRODUCT: [
        "pending", "processing", "succeeded", "failed", "timeout", "uncertain", "canceled",
        "archived",
    ],
}  # fmt: skip
DETAILS = st.one_of(
    st.none(),
    st.sampled_from(["timeout", "UNCERTAIN", "certain", "manual_review", "safe_to_retry", ""]),
    st.integers(0, 2),
)
MESSAGE_STATES = ["streaming", "completed", "Completed", "failed", "refused", "cancelled",
                  "canceled", "exploded", ""]  # fmt: skip
STOP_REASONS = ["", "end_turn", "error", "timeout", "user_stop", "agent_lost", "bogus"]
OFFSETS = st.one_of(st.none(), st.integers(-5, 5).map(lambda h: NOW + dt.timedelta(hours=h)))

messages = st.lists(
    st.fixed_dictionaries(
        {
            "source": st.sampled_from(["envelope", "envelope", "a2a"]),
            "type": st.sampled_from(["agent_reply", "agent_reply", "chat_message"]),
            "state": st.sampled_from(MESSAGE_STATES),
            "stop_reason": st.sampled_from(STOP_REASONS),
            "created_at": OFFSETS,
            "updated_at": OFFSETS,
            "lie": st.booleans(),
        }
    ),
    max_size=4,
)
tasks = st.lists(
    st.sampled_from(sorted(TASK_STATES)).flatmap(
        lambda protocol: st.fixed_dictionaries(
            {
                "protocol": st.just(protocol),
                "raw_state": st.sampled_from(TASK_STATES[protocol]),
                "details": st.fixed_dictionaries(
                    {name: DETAILS for name in task_states.PRODUCER_DETAILS}
                ),
                "lie": st.sampled_from([None, *DISPLAY_STATUSES]),
                "version": st.sampled_from([PROJECTION_VERSION, 1]),
                "updated_at": OFFSETS,
                "messages": messages,
            }
        )
    ),
    max_size=8,
)
operations = st.lists(
    st.fixed_dictionaries(
        {
            "raw_status": st.sampled_from(
                [
                    "running",
                    "succeeded",
                    "Succeeded",
                    "failed",
                    "projection_pending",
                    "canceled",
                    "outcome_unknown",
                    "paused",
                ]
            ),  # fmt: skip
            "effect_state": st.sampled_from(["", "committed", "COMMITTED", "failed", "weird"]),
            "projection_state": st.sampled_from(["", "synced", "pending", "not_applicable"]),
            "error_code": st.sampled_from(["", "OUTCOME_UNKNOWN", "RUNTIME_EXECUTION_FAILED"]),
            "error_retry_mode": st.sampled_from(["", "resubmit", "Resume", "none"]),
            "error_effect_state": st.sampled_from(["", "outcome_unknown", "gone"]),
            "terminal": st.booleans(),
            "updated_at": OFFSETS,
            "lie": st.booleans(),
        }
    ),
    max_size=6,
)


def projected(projection: Any, lie: Any) -> dict[str, Any]:
    fields = projection.as_fields()
    if lie:
        fields["status"] = lie if isinstance(lie, str) else "completed"
    return fields


def store(task_specs: list[dict[str, Any]], op_specs: list[dict[str, Any]]) -> None:
    """Rows written as they are (past the services): whatever a database may hold."""
    Message.objects.all().delete()
    Task.objects.all().delete()
    RuntimeOperation.objects.all().delete()
    for n, spec in enumerate(task_specs):
        details = {k: v for k, v in spec["details"].items() if v is not None}
        payload = {"status": spec["raw_state"], **details}
        expected = task_states.project_stored(spec["protocol"], spec["raw_state"], payload)
        task = Task.objects.create(
            task_id=f"tsk_gen_{n}",
            protocol=spec["protocol"],
            raw_state=spec["raw_state"],
            raw_payload=payload,
            payload_digest="x",
            updated_at=spec["updated_at"],
            **{**projected(expected, spec["lie"]), "projection_version": spec["version"]},
        )
        for i, message in enumerate(spec["messages"]):
            expected = task_states.project_message(
                message["state"], stop_reason=message["stop_reason"]
            )
            Message.objects.create(
                message_id=f"msg_gen_{n}_{i}",
                source=message["source"],
                task=task,
                type=message["type"],
                state=message["state"],
                stop_reason=message["stop_reason"],
                created_at=message["created_at"],
                updated_at=message["updated_at"],
                payload_digest="x",
                **projected(expected, message["lie"]),
            )
    for n, spec in enumerate(op_specs):
        fields = {k: v for k, v in spec.items() if k not in ("lie",)}
        expected = projection_audit.project_operation(fields)
        RuntimeOperation.objects.create(
            operation_id=f"op_gen_{n}",
            instance_id="ins_1",
            method="session/set_model",
            payload_digest="x",
            **fields,
            **projected(expected, spec["lie"]),
        )


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(task_specs=tasks, op_specs=operations, chunk=st.sampled_from([1, 2, 5, 50_000]))
def test_a_generated_mix(task_specs, op_specs, chunk):
    store(task_specs, op_specs)
    assert_same_findings((chunk,))
