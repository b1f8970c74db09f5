"""`manage.py sync_beeos`: the pull sync over real HTTP against the BeeOS stand-in.

Everything goes through the real command (or the ``Syncer`` it runs), the real
``beeos_sdk`` client and the stand-in server, whose payloads are built and checked
with the SDK models; assertions are on the mirror (tasks, messages, operations,
events, audit entries) and on what the command prints.
"""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
import hmac
import io
import json
import re
import time
import types
import uuid
from unittest.mock import ANY

import pytest
from django.core.management import CommandError, call_command

from beeos_console.auditlog.models import AuditEntry
from beeos_console.core import tokens
from beeos_console.upstream import clients, inbox, sync
from beeos_console.upstream.management.commands import sync_beeos as command_module
from beeos_console.upstream.models import SyncCursor
from beeos_console.upstream.sync import Syncer, message_envelope, parse_sse
from operations.models import RuntimeOperation, RuntimeOperationEvent
from tasks.models import Message, Task
from tests.factories import make_operation, make_task
from tests.standin import BeeOSStandIn
from tests.standin.contract import wire

pytestmark = pytest.mark.django_db

API_KEY = "oag_sync_test_key"
AGENT = "agent_sync"
INSTANCE = "inst_sync"
T0 = dt.datetime(2026, 11, 1, 12, 0, tzinfo=dt.UTC)
LIST = "/api/v1/tasks"
WEBHOOK_SECRET = "whsec_" + "s" * 40


@pytest.fixture
def standin(settings):
    with BeeOSStandIn(api_key=API_KEY) as server:
        settings.BEEOS_API_URL = server.url
        settings.BEEOS_API_KEY = API_KEY
        settings.BEEOS_INSTANCES = []
        yield server
    assert server.errors == []  # the stand-in itself never crashed


# --- helpers ----------------------------------------------------------------------


def seed_tasks(server: BeeOSStandIn, count: int, status: str = "completed", start: int = 0):
    """``task_NNNN``, created one second apart: the list serves them newest first."""
    return [
        server.add_task(
            f"task_{i:04d}", agent_id=AGENT, status=status, created_at=T0 + dt.timedelta(seconds=i)
        )
        for i in range(start, start + count)
    ]


def _s(seconds: int) -> dt.timedelta:
    return dt.timedelta(seconds=seconds)


def task_path(task_id: str) -> str:
    return f"/api/v1/agents/{AGENT}/tasks/{task_id}"


def sync_once(*args: str) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command("sync_beeos", "--once", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def sync_once_failing(*args: str) -> tuple[str, str, CommandError]:
    out, err = io.StringIO(), io.StringIO()
    with pytest.raises(CommandError) as caught:
        call_command("sync_beeos", "--once", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue(), caught.value


SUMMARY = re.compile(r"^sync pass (\d+) done in [\d.]+ s: (.*)$", re.MULTILINE)


def summaries(out: str) -> list[dict[str, int]]:
    """The counts of every ``sync pass N done`` line."""
    return [
        {k: int(v) for k, v in (part.rsplit(" ", 1) for part in counts.split(", "))}
        for _, counts in SUMMARY.findall(out)
    ]


def summary(out: str) -> dict[str, int]:
    (only,) = summaries(out)
    return only


def page_lines(out: str) -> list[str]:
    return [line for line in out.splitlines() if line.startswith("tasks page ")]


def list_calls(server: BeeOSStandIn) -> list:
    return server.requests_to("GET", LIST)


def get_task_calls(server: BeeOSStandIn, task_id: str = "[^/]+") -> list:
    return server.requests_to("GET", re.compile(f"^{task_path(task_id)}$"))


def audit_of(task_id: str) -> list[AuditEntry]:
    return list(AuditEntry.objects.filter(object_kind="task", object_id=task_id).order_by("id"))


# --- pure helpers -------------------------------------------------------------------


def test_message_envelope_maps_a_message_dto():
    dto = {
        "message_id": "m1",
        "offset": 3,
        "type": "agent_reply",
        "publisher_id": "agent:x",
        "in_reply_to": "m0",
        "body": "hi",
        "payload": {"k": 1},
        "stop_reason": "end_turn",
        "created_at": "2026-11-01T12:00:00Z",
        "updated_at": None,
    }
    assert message_envelope(dto, "chan") == {
        "id": "m1",
        "conversation_id": "chan",
        "type": "agent_reply",
        "sender": "agent:x",
        "reply_to": "m0",
        "body": "hi",
        "state": "completed",  # pre-v3 rows omit state: completed
        "stop_reason": "end_turn",
        "content": {"k": 1},
        "created_at": "2026-11-01T12:00:00Z",
    }
    assert message_envelope({**dto, "state": "streaming"}, "chan")["state"] == "streaming"


def test_parse_sse_reads_data_frames_and_skips_garbage():
    text = (
        'id: 1\r\ndata: {"a": 1}\r\n\r\n'
        ": keep-alive\n\n"
        'id: 2\ndata: {"b":\ndata: 2}\n\n'
        "data: nope\n\n"
    )
    assert list(parse_sse(text)) == [{"a": 1}, {"b": 2}]


# --- 1. paging, getTask per task, messages ---------------------------------------------


def test_first_pass_pages_through_all_tasks_and_mirrors_their_messages(standin, monkeypatch):
    # Pages of 3 instead of 100: same code path, fewer HTTP round trips.
    monkeypatch.setattr(sync, "TASK_PAGE", 3)
    seed_tasks(standin, 7)
    request_id = str(uuid.uuid4())
    standin.add_envelope(
        "task_0006",
        {
            "id": request_id,
            "conversation_id": str(uuid.uuid4()),
            "type": "chat_message",
            "sender": "user:ada",
            "body": "Summarise the escalations.",
            "state": "completed",
            "stop_reason": "end_turn",
            "created_at": "2026-11-01T12:00:00Z",
        },
    )
    reply = standin.add_message(
        "task_0006",
        type="agent_reply",
        body="Found 14 escalations.",
        publisher_id="agent:sync",
        in_reply_to=request_id,
        stop_reason="max_tokens",  # no state: a pre-v3 row
    )
    standin.add_message(
        "task_0001", type="agent_reply", body="…", publisher_id="agent:sync", state="streaming"
    )

    out, err = sync_once()

    assert err == ""
    assert Task.objects.count() == 7
    assert set(Task.objects.values_list("status", "raw_state").distinct()) == {
        ("completed", "completed")
    }
    assert Task.objects.get(task_id="task_0000").agent_id == AGENT
    # Three pages of the caller's tasks, each from the previous page's cursor ...
    calls = list_calls(standin)
    assert [r.query.get("since") for r in calls] == [None, ANY, ANY]
    assert calls[1].query["since"] != calls[2].query["since"]
    assert {(r.query["state"][0], r.query["limit"][0]) for r in calls} == {("all", "3")}
    # ... then getTask and the messages of every task, once.
    assert sorted(r.path for r in get_task_calls(standin)) == [
        task_path(f"task_{i:04d}") for i in range(7)
    ]
    assert len(standin.requests_to("GET", task_path("*") + "/messages")) == 7
    assert page_lines(out) == [
        "tasks page 1: 3 tasks (created 5)",
        "tasks page 2: 3 tasks (created 4)",
        "tasks page 3: 1 tasks (created 1)",
    ]
    assert summary(out) == {
        "created": 10,
        "updated": 0,
        "unchanged": 0,
        "stale": 0,
        "rejected": 0,
        "not found upstream": 0,
        "errors": 0,
    }

    request = Message.objects.get(message_id=request_id)
    assert (request.sender, request.type, request.state, request.stop_reason) == (
        "user:ada",
        "chat_message",
        "completed",
        "end_turn",
    )
    answer = Message.objects.get(message_id=reply.message_id)
    assert answer.task.task_id == "task_0006"
    assert (answer.sender, answer.reply_to, answer.body) == (
        "agent:sync",
        request_id,
        "Found 14 escalations.",
    )
    assert (answer.state, answer.stop_reason) == ("completed", "max_tokens")
    streaming = Message.objects.get(task__task_id="task_0001")
    assert (streaming.state, streaming.status) == ("streaming", "processing")


# --- 2. second run: nothing duplicated; new tasks found; interrupted runs resume ----------


def test_second_run_changes_nothing_and_finds_new_tasks(standin, monkeypatch):
    monkeypatch.setattr(sync, "TASK_PAGE", 3)
    seed_tasks(standin, 7)
    for i in range(7):
        standin.add_message(f"task_{i:04d}", body=f"reply {i}", publisher_id="agent:sync")
    sync_once()
    assert (Task.objects.count(), Message.objects.count()) == (7, 7)
    audit_before = AuditEntry.objects.count()

    standin.clear_requests()
    out, _ = sync_once()

    # Nothing changed: the first page is all mirrored and agrees with the mirror, so the
    # pass stops there and reads no task (the finished tasks are not swept either).
    assert summary(out) == {
        "created": 0,
        "updated": 0,
        "unchanged": 0,
        "stale": 0,
        "rejected": 0,
        "not found upstream": 0,
        "errors": 0,
    }
    assert standin.calls == {"list_user_tasks": 1}
    assert page_lines(out) == ["tasks page 1: 3 tasks (nothing new)"]
    assert (Task.objects.count(), Message.objects.count()) == (7, 7)
    assert AuditEntry.objects.count() == audit_before
    # A finished pass starts the next one from the newest tasks again ...
    assert "since" not in list_calls(standin)[0].query

    # ... so a task created upstream meanwhile (newest, on page 1) is mirrored.
    seed_tasks(standin, 1, status="running", start=100)
    out, _ = sync_once()
    assert summary(out)["created"] == 1
    assert Task.objects.get(task_id="task_0100").status == "processing"


def test_an_interrupted_pass_resumes_from_the_stored_cursor_and_rereads_what_it_skips(
    standin, monkeypatch, client, settings
):
    """Page 2 of the list fails: the cursor of page 1 is kept and the next run walks from
    there, then from the top: tasks on page 1 that ended upstream or that a webhook
    flagged are read again, the rest are not."""
    monkeypatch.setattr(sync, "TASK_PAGE", 3)
    seed_tasks(standin, 3, status="completed")  # page 2: task_0000..2
    standin.add_task("task_0003", agent_id=AGENT, status="completed", created_at=T0 + _s(3))
    standin.add_task("task_0004", agent_id=AGENT, status="running", created_at=T0 + _s(4))
    standin.add_task("task_0005", agent_id=AGENT, status="queued", created_at=T0 + _s(5))

    def fail_next_list_page(line: str) -> None:
        if line.startswith("tasks page 1:"):
            standin.fail(LIST, 500)

    api_client = clients.platform_client()
    report = Syncer(api_client, progress=fail_next_list_page).run()
    assert report.counts["errors"] == 1
    assert report.errors == ["listUserTasks page 2: 500"]
    assert set(Task.objects.values_list("task_id", flat=True)) == {
        "task_0003",
        "task_0004",
        "task_0005",
    }
    cursor = SyncCursor.objects.get(name="tasks").value
    assert cursor == list_calls(standin)[1].query["since"][0]

    # Meanwhile upstream: task_0005 finishes, task_0004 fails (a webhook says
    # "completed" first: the API is truth), task_0003 gets a late message.
    standin.set_task_status("task_0005", "completed", result={"answer": 42})
    standin.set_task_status("task_0004", "failed", error="tool crashed")
    settings.BEEOS_WEBHOOK_SECRET = WEBHOOK_SECRET
    body = json.dumps(
        {
            "type": "task_status",
            "task_id": "task_0004",
            "status": "completed",
            "final": True,
            "timestamp": "2026-11-30T08:10:00.456Z",
        }
    ).encode()
    ts = str(int(time.time()))
    mac = hmac.new(WEBHOOK_SECRET.encode(), ts.encode() + b"." + body, hashlib.sha256)
    response = client.generic(
        "POST",
        "/api/v1/webhooks/beeos/",
        body,
        content_type="application/json",
        HTTP_X_BEEOS_SIGNATURE=f"t={ts},v1={mac.hexdigest()}",
    )
    assert response.status_code == 200, response.content
    inbox.drain()  # the receiver queues; the worker applies (and flags the task)
    flagged = Task.objects.get(task_id="task_0004")
    assert (flagged.raw_state, flagged.resync_requested_at is not None) == ("completed", True)
    late = standin.add_message("task_0003", body="late reply", publisher_id="agent:sync")
    Task.objects.filter(task_id="task_0003").update(resync_requested_at=T0)
    standin.clear_requests()

    out, _ = sync_once()

    # Resumed from the stored cursor (the older page), then the top of the list, down to
    # the first page with no new task (the top page itself).
    assert [r.query.get("since") for r in list_calls(standin)] == [[cursor], None]
    assert page_lines(out)[0] == "tasks page 1: 3 tasks (created 3)"
    assert Task.objects.count() == 6
    # On the top page each task moved: task_0005 ended (listed closed, mirrored open),
    # task_0004 and task_0003 were flagged. Each is read once.
    for task_id in ("task_0003", "task_0004", "task_0005"):
        assert len(get_task_calls(standin, task_id)) == 1
    # The open task that was not on any listed page was re-read: status change + audit.
    done = Task.objects.get(task_id="task_0005")
    assert (done.raw_state, done.status, done.result) == ("completed", "completed", {"answer": 42})
    (entry,) = audit_of("task_0005")
    assert (entry.actor, entry.actor_kind, entry.action) == (
        "sync_beeos",
        "feeder",
        "task.state_changed",
    )
    assert (entry.before["raw_state"], entry.after["raw_state"]) == ("queued", "completed")
    assert (entry.before["status"], entry.after["status"]) == ("queued", "completed")
    # The webhook-flagged tasks were re-read and their flag cleared.
    failed = Task.objects.get(task_id="task_0004")
    assert (failed.raw_state, failed.status, failed.error) == ("failed", "failed", "tool crashed")
    assert failed.resync_requested_at is None
    assert [(e.actor, e.after["raw_state"]) for e in audit_of("task_0004")] == [
        ("beeos-webhook", "completed"),
        ("sync_beeos", "failed"),
    ]
    reread = Task.objects.get(task_id="task_0003")
    assert reread.resync_requested_at is None
    assert Message.objects.get(message_id=late.message_id).task == reread
    # After this complete pass the cursor is reset: the next pass starts at the top.
    assert SyncCursor.objects.get(name="tasks").value == ""


# --- 3. status changes between runs -----------------------------------------------------


def test_a_status_change_upstream_is_mirrored_once_and_audited(standin):
    standin.add_task("task_run", agent_id=AGENT, status="running", created_at=T0)
    standin.add_task("task_done", agent_id=AGENT, status="completed", created_at=T0 + _s(1))
    out, _ = sync_once()
    assert summary(out)["created"] == 2
    assert len(get_task_calls(standin, "task_run")) == 1  # read once per pass, not twice
    assert list_calls(standin)[0].query["limit"] == ["100"]  # the contract's maximum
    assert Task.objects.get(task_id="task_run").status == "processing"

    standin.set_task_status("task_run", "completed", result={"ok": True})
    out, _ = sync_once()

    # Seen on the list page (listed closed, mirrored open): read; task_done is not.
    assert summary(out) == {
        "created": 0,
        "updated": 1,
        "unchanged": 0,
        "stale": 0,
        "rejected": 0,
        "not found upstream": 0,
        "errors": 0,
    }
    assert len(get_task_calls(standin, "task_done")) == 1  # the first pass only
    task = Task.objects.get(task_id="task_run")
    assert (task.raw_state, task.status, task.result) == ("completed", "completed", {"ok": True})
    (entry,) = audit_of("task_run")
    assert (entry.actor, entry.actor_kind) == ("sync_beeos", "feeder")
    assert (entry.before["status"], entry.after["status"]) == ("processing", "completed")
    assert audit_of("task_done") == []


# --- 4. unknown upstream values ----------------------------------------------------------


def test_an_unknown_task_status_is_stored_raw_and_projected_unmapped(standin):
    standin.add_task("task_paused", agent_id=AGENT, status="running", created_at=T0)
    standin.add_task("task_fine", agent_id=AGENT, status="completed", created_at=T0 + _s(1))
    # The SDK's TaskStatus enum refuses the value, so serve the raw JSON directly.
    data = {**wire(standin.task("task_paused")), "status": "paused_by_ops"}
    standin.fail(task_path("task_paused"), 200, {"success": True, "data": data}, times=None)

    out, err = sync_once()

    task = Task.objects.get(task_id="task_paused")
    assert (task.raw_state, task.status, task.reason) == (
        "paused_by_ops",
        "unmapped",
        "unmapped_state",
    )
    assert task.raw_payload["status"] == "paused_by_ops"
    assert Task.objects.get(task_id="task_fine").status == "completed"
    assert summary(out)["errors"] == 0 and summary(out)["rejected"] == 0
    assert err == ""


# --- 5. rate limits ------------------------------------------------------------------------


def test_a_429_on_the_task_list_is_waited_out_as_retry_after_says(standin, monkeypatch):
    seed_tasks(standin, 2)
    waits: list[float] = []
    monkeypatch.setattr(command_module, "Syncer", functools.partial(Syncer, sleep=waits.append))
    standin.rate_limit(LIST, times=2, retry_after=7)

    out, _ = sync_once()

    assert waits == [7, 7]
    assert out.count("rate limited: waiting 7 s (Retry-After)") == 2
    assert [r.fault for r in list_calls(standin)] == ["respond", "respond", None]
    assert Task.objects.count() == 2
    assert summary(out)["errors"] == 0


# --- 6. errors on single objects ----------------------------------------------------------


def test_a_failing_get_task_is_counted_and_the_pass_goes_on(standin):
    seed_tasks(standin, 4)
    standin.fail(task_path("task_0001"), 500)
    standin.drop_connection(task_path("task_0002"))

    out, err, error = sync_once_failing()

    assert set(Task.objects.values_list("task_id", flat=True)) == {"task_0000", "task_0003"}
    assert summary(out)["errors"] == 2 and summary(out)["created"] == 2
    assert "error: getTask task_0001: 500" in err
    assert "error: getTask task_0002:" in err
    assert str(error) == "2 upstream errors (see above)."

    # The next pass picks them up.
    out, _ = sync_once()
    assert Task.objects.count() == 4
    assert summary(out)["created"] == 2


# --- 7. runtime operations -------------------------------------------------------------------


def test_runtime_operations_events_and_ops_that_left_the_active_list(
    standin, settings, monkeypatch
):
    monkeypatch.setattr(sync, "OPERATION_PAGE", 2)
    settings.BEEOS_INSTANCES = [INSTANCE]
    op_a, op_b, op_c = (
        standin.add_operation(
            instance_id=INSTANCE, method=method, status=status, created_at=T0 + _s(i)
        )
        for i, (method, status) in enumerate(
            [
                ("session/set_model", "running"),
                ("skills/install", "running"),
                ("cron/run", "queued"),
            ]
        )
    )
    standin.add_operation(instance_id=INSTANCE, status="succeeded", created_at=T0 + _s(3))
    standin.add_event(op_a.id, "runtime_operation_started", payload={"executionMode": "start"})
    standin.add_event(
        op_a.id, "runtime_operation_progress", payload={"phase": "download", "current": 1}
    )

    out, _ = sync_once()

    assert "operations of inst_sync page 1: 2" in out
    assert "operations of inst_sync page 2: 1" in out
    assert set(RuntimeOperation.objects.values_list("operation_id", "status")) == {
        (op_a.id, "processing"),
        (op_b.id, "processing"),
        (op_c.id, "queued"),
    }
    events = RuntimeOperationEvent.objects.filter(operation__operation_id=op_a.id)
    assert [(e.type, int(e.sequence)) for e in events.order_by("sequence")] == [
        ("runtime_operation_started", 1),
        ("runtime_operation_progress", 2),
    ]
    assert RuntimeOperation.objects.get(operation_id=op_a.id).sequence == 2

    # Upstream: op_b succeeds, op_c's outcome becomes unknown; both leave the active list.
    standin.add_event(op_b.id, "runtime_rpc_response", outcome="succeeded", result={"ok": True})
    standin.set_operation_status(op_b.id, "succeeded", result={"ok": True})
    standin.set_operation_status(
        op_c.id,
        "outcome_unknown",
        error={
            "code": "OUTCOME_UNKNOWN",
            "message": "instance went away",
            "operationId": op_c.id,
            "effectState": "outcome_unknown",
            "retryMode": "none",
        },
    )
    standin.clear_requests()

    out, _ = sync_once()

    # Listed from the cursor of the last page (op_c's): it has left the active list, so
    # it is read; op_b (on an earlier page) is found by the sweep of open operations.
    assert "operations of inst_sync page 1: 0" in out
    assert "swept 2 open operations of inst_sync (1 changed)" in out
    op_path = f"/api/v1/instances/{INSTANCE}/operations/"
    for op in (op_b, op_c):
        assert len(standin.requests_to("GET", op_path + op.id)) == 1
    b = RuntimeOperation.objects.get(operation_id=op_b.id)
    assert (b.raw_status, b.terminal, b.status) == ("succeeded", True, "completed")
    c = RuntimeOperation.objects.get(operation_id=op_c.id)
    assert (c.raw_status, c.status, c.reason, c.outcome_certainty) == (
        "outcome_unknown",
        "failed",
        "outcome_unknown",
        "uncertain",
    )
    assert RuntimeOperationEvent.objects.get(operation=b, type="runtime_rpc_response").outcome == (
        "succeeded"
    )
    changes = AuditEntry.objects.filter(action="operation.state_changed").order_by("object_id")
    assert {(e.object_id, e.actor, e.before["status"], e.after["status"]) for e in changes} == {
        (op_b.id, "sync_beeos", "processing", "completed"),
        (op_c.id, "sync_beeos", "queued", "failed"),
    }

    # Terminal now: a third pass leaves them alone; op_a is still open (swept, unchanged:
    # its events are not read again).
    standin.clear_requests()
    sync_once("--instance", INSTANCE)
    assert standin.requests_to("GET", op_path + op_b.id) == []
    assert len(standin.requests_to("GET", op_path + op_a.id)) == 1
    assert standin.requests_to("GET", op_path + op_a.id + "/events") == []


# --- 8. configuration ------------------------------------------------------------------------


def test_without_the_api_url_the_command_says_what_is_missing(settings):
    settings.BEEOS_API_URL = ""
    with pytest.raises(CommandError, match="BEEOS_API_URL is not set.*needs the BeeOS API"):
        call_command("sync_beeos", "--once", stdout=io.StringIO())


# --- 9. periodic mode -------------------------------------------------------------------------


class StopLoop(Exception):
    pass


def test_every_runs_pass_after_pass_and_survives_errors(standin, monkeypatch):
    seed_tasks(standin, 2)
    standin.fail(task_path("task_0001"), 503)  # only the first pass
    slept: list[float] = []

    def fake_sleep(seconds: float) -> None:
        slept.append(seconds)
        if len(slept) == 2:
            raise StopLoop

    monkeypatch.setattr(
        command_module, "time", types.SimpleNamespace(monotonic=time.monotonic, sleep=fake_sleep)
    )
    out, err = io.StringIO(), io.StringIO()
    with pytest.raises(StopLoop):
        call_command("sync_beeos", "--every", "30", stdout=out, stderr=err)

    first, second = summaries(out.getvalue())
    assert (first["created"], first["errors"]) == (1, 1)
    assert (second["created"], second["errors"]) == (1, 0)
    assert "sync pass 2 done" in out.getvalue()
    assert len(slept) == 2 and all(25 < s <= 30 for s in slept)
    assert len(list_calls(standin)) == 2
    assert Task.objects.count() == 2


# --- 10. objects upstream answers 404 for (issue #11, point 8) -----------------------------


def mirror_task(task_id: str, status: str = "running", **extra) -> Task:
    """A task only the mirror has (the stand-in answers 404 for it)."""
    return make_task(status, task_id=task_id, agent_id=AGENT, **extra)


def mirror_operation(status: str = "running") -> RuntimeOperation:
    return make_operation(status, id=str(uuid.uuid4()), instanceId=INSTANCE)


def op_path(operation_id: str) -> str:
    return f"/api/v1/instances/{INSTANCE}/operations/{operation_id}"


def test_a_task_and_an_operation_upstream_answers_404_for_are_marked_not_errors(
    standin, settings, client, support_user
):
    settings.BEEOS_INSTANCES = [INSTANCE]
    standin.add_instance(INSTANCE)
    seed_tasks(standin, 1, status="running")  # a live one beside them
    live_op = standin.add_operation(instance_id=INSTANCE, status="running", created_at=T0)
    mirror_task("task_gone")
    gone_op = mirror_operation()

    out, err = sync_once()  # exit status 0: no CommandError

    assert err == ""
    assert summary(out) == {
        "created": 2,
        "updated": 0,
        "unchanged": 0,
        "stale": 0,
        "rejected": 0,
        "not found upstream": 2,
        "errors": 0,
    }
    assert "swept 1 open tasks (0 changed, 1 not found upstream)" in out
    assert "2 objects not found upstream (404)" in out
    task = Task.objects.get(task_id="task_gone")
    op = RuntimeOperation.objects.get(operation_id=gone_op.operation_id)
    assert task.upstream_missing_at is not None and op.upstream_missing_at is not None
    # The mirror keeps their last snapshot; what is live is not marked.
    assert (task.raw_state, op.raw_status) == ("running", "running")
    assert Task.objects.get(task_id="task_0000").upstream_missing_at is None
    assert RuntimeOperation.objects.get(operation_id=live_op.id).upstream_missing_at is None

    # The next pass leaves them alone: no read, no error, the first 404's time kept.
    standin.clear_requests()
    out, err = sync_once()
    assert (summary(out)["not found upstream"], summary(out)["errors"], err) == (0, 0, "")
    assert get_task_calls(standin, "task_gone") == []
    assert standin.requests_to("GET", op_path(gone_op.operation_id)) == []
    assert Task.objects.get(task_id="task_gone").upstream_missing_at == task.upstream_missing_at

    # Shown on their detail pages; filterable on both lists, HTML and API.
    client.force_login(support_user)
    page = client.get("/tasks/task_gone/").content.decode()
    assert "Not found upstream." in page and 'id="upstream-missing"' in page
    assert 'id="upstream-missing"' not in client.get("/tasks/task_0000/").content.decode()
    page = client.get(f"/operations/{gone_op.operation_id}/").content.decode()
    assert "Not found upstream." in page
    listing = client.get("/tasks/?upstream_missing=true").content.decode()
    assert "task_gone" in listing and "task_0000" not in listing
    assert 'name="upstream_missing"' in client.get("/tasks/").content.decode()
    listing = client.get("/operations/?upstream_missing=true").content.decode()
    assert gone_op.operation_id in listing and live_op.id not in listing
    assert 'name="upstream_missing"' in client.get("/operations/").content.decode()
    _, key = tokens.issue(support_user, "test")
    auth = {"HTTP_AUTHORIZATION": f"Bearer {key}"}
    rows = client.get("/api/v1/tasks/?upstream_missing=true", **auth).json()["results"]
    assert [r["task_id"] for r in rows] == ["task_gone"]
    assert rows[0]["upstream_missing_at"] is not None
    rows = client.get("/api/v1/tasks/?upstream_missing=false", **auth).json()["results"]
    assert [r["task_id"] for r in rows] == ["task_0000"]
    rows = client.get("/api/v1/operations/?upstream_missing=true", **auth).json()["results"]
    assert [r["operation_id"] for r in rows] == [gone_op.operation_id]


def test_a_missing_task_is_reread_rarely_and_unmarked_when_upstream_has_it_again(standin):
    mirror_task("task_back")
    sync_once()
    assert Task.objects.get(task_id="task_back").upstream_missing_at is not None

    # It comes back upstream, finished; the rare re-read of missing objects is due.
    standin.add_task("task_back", agent_id=AGENT, status="completed", created_at=T0)
    SyncCursor.objects.filter(name=sync.MISSING_REREAD_CURSOR).update(
        value=(dt.datetime.now(dt.UTC) - sync.MISSING_REREAD_EVERY - _s(60)).isoformat()
    )
    out, _ = sync_once()

    task = Task.objects.get(task_id="task_back")
    assert (task.upstream_missing_at, task.raw_state) == (None, "completed")
    assert summary(out)["not found upstream"] == 0


def test_a_webhook_flag_on_a_missing_task_is_answered_by_the_404(standin):
    mirror_task("task_flagged", "completed")
    Task.objects.filter(task_id="task_flagged").update(resync_requested_at=T0)

    out, _ = sync_once()

    task = Task.objects.get(task_id="task_flagged")
    assert task.resync_requested_at is None and task.upstream_missing_at is not None
    assert summary(out)["not found upstream"] == 1
    standin.clear_requests()
    sync_once()
    assert get_task_calls(standin, "task_flagged") == []


def test_a_404_that_is_not_beeos_speaking_is_an_error_and_marks_nothing(standin):
    """A wrong BEEOS_API_URL path or a proxy answers 404 too: never mark the mirror for it."""
    mirror_task("task_proxy")
    standin.fail(task_path("task_proxy"), 404, "<html>Not Found</html>", content_type="text/html")

    out, err, error = sync_once_failing()

    assert Task.objects.get(task_id="task_proxy").upstream_missing_at is None
    assert "error: getTask task_proxy: 404" in err
    assert summary(out)["not found upstream"] == 0


@pytest.mark.parametrize("failure", ["refused", "401", "403", "503"])
def test_the_exit_status_reports_transport_and_auth_failures(standin, settings, failure):
    seed_tasks(standin, 2, status="running")
    mirror_task("task_gone")  # a vanished object alone never fails the run
    if failure == "refused":
        standin.stop()
    elif failure == "401":
        settings.BEEOS_API_KEY = "oag_wrong_key"
    else:
        standin.fail(task_path("task_0001"), int(failure))

    out, err, error = sync_once_failing()

    assert "upstream errors (see above)" in str(error)
    assert summary(out)["errors"] >= 1
    if failure in ("401", "refused"):
        # Every read would fail the same way: the pass stops at the first one.
        assert summary(out)["errors"] == 1
        assert Task.objects.get(task_id="task_gone").upstream_missing_at is None
    if failure == "401":
        assert "BeeOS refused the API key (check BEEOS_API_KEY); pass stopped: 401" in err
        assert len(standin.requests) == 1
    if failure == "refused":
        assert "BeeOS is unreachable (check BEEOS_API_URL); pass stopped" in err
    if failure == "403":
        assert "error: getTask task_0001: 403" in err
        assert summary(out)["not found upstream"] == 1


def test_a_message_dto_without_created_at_is_mirrored(standin):
    """The contract requires only message_id, offset and type of a MessageDTO."""
    standin.add_task("task_bare", agent_id=AGENT, status="completed", created_at=T0)
    bare = standin.add_message("task_bare", body="no timestamps", created_at=None)
    minimal = standin.add_message("task_bare", type="chat_message", created_at=None)
    assert "created_at" not in wire(bare)

    out, _ = sync_once()

    assert summary(out)["rejected"] == 0
    message = Message.objects.get(message_id=bare.message_id)
    assert (message.task.task_id, message.body, message.state) == (
        "task_bare",
        "no timestamps",
        "completed",
    )
    # Stood in for by the task's creation time: stable, so a second read changes nothing.
    assert message.created_at == T0
    assert Message.objects.get(message_id=minimal.message_id).type == "chat_message"
    Task.objects.filter(task_id="task_bare").update(resync_requested_at=T0)  # read it again
    out, _ = sync_once()
    assert summary(out) == {
        "created": 0,
        "updated": 0,
        "unchanged": 3,
        "stale": 0,
        "rejected": 0,
        "not found upstream": 0,
        "errors": 0,
    }


def test_a_task_error_code_read_by_the_sync_is_stored(standin):
    standin.add_task("task_coded", agent_id=AGENT, status="failed", created_at=T0)
    # The SDK types ``error`` as a string; serve the error envelope's object raw.
    data = {
        **wire(standin.task("task_coded")),
        "error": {"code": "service_timeout", "message": "gave up waiting"},
    }
    standin.fail(task_path("task_coded"), 200, {"success": True, "data": data}, times=None)

    sync_once()

    task = Task.objects.get(task_id="task_coded")
    assert (task.error_code, task.error) == ("service_timeout", "gave up waiting")
    assert task.raw_payload["error"] == data["error"]


def test_a_fresh_demo_database_syncs_against_the_standin_with_exit_status_0(standin, settings):
    call_command("seed_demo", stdout=io.StringIO())
    open_openapi = Task.objects.filter(
        protocol="openapi", status__in=("queued", "processing", "unmapped")
    ).count()

    out, err = sync_once()  # the demo's tasks do not exist upstream: 404s, not errors

    assert summary(out)["errors"] == 0 and err == ""
    # The demo's open tasks are swept a few per pass (BEEOS_SYNC_SWEEP), not all at once.
    swept = min(open_openapi, settings.BEEOS_SYNC_SWEEP)
    assert swept > 0
    assert summary(out)["not found upstream"] == swept
    assert Task.objects.filter(upstream_missing_at__isnull=False).count() == swept


def test_each_clean_part_of_a_pass_is_stamped_for_metrics(standin, settings):
    """``last_success:<kind>`` rows feed ``beeos_console_sync_lag_seconds`` (/metrics)."""
    settings.BEEOS_INSTANCES = [INSTANCE]
    standin.add_instance(INSTANCE)
    seed_tasks(standin, 1)

    sync_once()

    def stamps() -> dict[str, str]:
        rows = SyncCursor.objects.filter(name__startswith="last_success:")
        return dict(rows.values_list("name", "value"))

    first = stamps()
    assert set(first) == {"last_success:tasks", "last_success:operations"}
    standin.fail(f"/api/v1/instances/{INSTANCE}/operations", 503)

    sync_once_failing()

    second = stamps()
    assert second["last_success:tasks"] > first["last_success:tasks"]
    assert second["last_success:operations"] == first["last_success:operations"]
