"""`sync_beeos` and A2A tasks (issue #17, point 3): each configured agent's tasks, sent and
received, listed with ``beeos-cloud-sdk`` ``a2a.list_tasks`` (cursor paging) and re-read
with ``a2a.get_task`` and the history the detail page needs.

Over real HTTP against the stand-in's Cloud surface, whose payloads are checked against
the Cloud SDK's own types (seed 003: a2aTaskView, directions, cursors, history_length).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import io
import json
import re
import time

import pytest
from django.core.management import CommandError, call_command

from beeos_console.auditlog.models import AuditEntry
from beeos_console.core import tokens
from beeos_console.upstream import inbox, sync
from beeos_console.upstream.management.commands import sync_beeos as command_module
from tasks.models import Message, Task
from tests.standin import BeeOSStandIn

pytestmark = pytest.mark.django_db

API_KEY = "bsk_sync_a2a_key"
ME = "agent_a"
T0 = dt.datetime(2026, 11, 1, 12, 0, tzinfo=dt.UTC)
WEBHOOK_SECRET = "whsec_" + "a" * 40
SUMMARY = re.compile(r"^sync pass \d+ done in [\d.]+ s: (.*)$", re.MULTILINE)


@pytest.fixture
def standin(settings):
    with BeeOSStandIn(api_key=API_KEY) as server:
        settings.BEEOS_API_URL = server.url
        settings.BEEOS_API_KEY = API_KEY
        settings.BEEOS_CLOUD_URL = server.cloud_url
        settings.BEEOS_CLOUD_API_KEY = API_KEY
        settings.BEEOS_A2A_AGENTS = [ME]
        settings.BEEOS_INSTANCES = []
        settings.BEEOS_SYNC_SWEEP = 0
        settings.BEEOS_WEBHOOK_SECRET = WEBHOOK_SECRET
        yield server
    assert server.errors == []


def stamp(minutes: int) -> str:
    return (T0 + dt.timedelta(minutes=minutes)).strftime("%Y-%m-%dT%H:%M:%S.000Z")


def history(task_id: str, count: int) -> list[dict]:
    return [
        {
            "messageId": f"{task_id}-m{n:03d}",
            "role": "ROLE_USER" if n % 2 == 0 else "ROLE_AGENT",
            "parts": [{"text": f"turn {n}"}],
            "taskId": task_id,
        }
        for n in range(count)
    ]


def seed(server: BeeOSStandIn, task_id: str, caller: str, target: str, state: str, minute: int):
    return server.add_a2a_task(
        task_id=task_id,
        agent_id=target,
        caller_agent_id=caller,
        state=state,
        created_at=stamp(minute),
        updated_at=stamp(minute),
        status={"state": state, "timestamp": stamp(minute)},
        history=history(task_id, 3),
    )


def seed_world(server: BeeOSStandIn) -> None:
    """Three tasks agent_a received, one it sent, one between two other agents."""
    seed(server, "a2a_r1", "agent_b", ME, "TASK_STATE_WORKING", 1)
    seed(server, "a2a_r2", "agent_c", ME, "TASK_STATE_COMPLETED", 2)
    seed(server, "a2a_s1", ME, "agent_b", "TASK_STATE_SUBMITTED", 3)
    seed(server, "a2a_r3", "agent_b", ME, "input-required", 4)
    seed(server, "a2a_x", "agent_x", "agent_y", "TASK_STATE_WORKING", 5)


def sync_once(server: BeeOSStandIn, *args: str) -> tuple[dict[str, int], dict[str, int], str]:
    server.clear_requests()
    out, err = io.StringIO(), io.StringIO()
    call_command("sync_beeos", "--once", *args, stdout=out, stderr=err)
    (counts,) = SUMMARY.findall(out.getvalue())
    summary = {k: int(v) for k, v in (part.rsplit(" ", 1) for part in counts.split(", "))}
    return dict(server.calls), summary, out.getvalue()


def a2a_lists(server: BeeOSStandIn) -> list[dict[str, list[str]]]:
    return [r.query for r in server.requests_to("GET", f"/v1/a2a/{ME}/tasks")]


def a2a_gets(server: BeeOSStandIn, task_id: str = "*") -> list:
    return server.requests_to("GET", f"/v1/a2a/*/tasks/{task_id}")


def test_both_directions_are_listed_with_cursors_and_mirrored_with_direction_and_counterpart(
    standin, monkeypatch
):
    monkeypatch.setattr(sync, "A2A_PAGE", 2)
    seed_world(standin)

    calls, summary, out = sync_once(standin)

    # sent: one page; received: two pages (3 tasks, 2 a page), the second from the cursor.
    queries = a2a_lists(standin)
    assert [(q["direction"], q.get("cursor") is not None) for q in queries] == [
        (["sent"], False),
        (["received"], False),
        (["received"], True),
    ]
    assert {q["limit"][0] for q in queries} == {"2"}
    assert "A2A tasks of agent_a (received) page 2: 1 tasks (created 1)" in out
    # Each new task read once, with the history the detail page needs (not the default 50).
    assert calls == {"list_user_tasks": 1, "a2a_list": 3, "a2a_get": 4}
    assert {r.query["history_length"][0] for r in a2a_gets(standin)} == {"200"}
    assert summary["created"] == 4 and summary["errors"] == 0

    rows = {
        t.task_id: (t.a2a_direction, t.a2a_counterpart, t.raw_state, t.status)
        for t in Task.objects.filter(protocol="a2a")
    }
    assert rows == {
        "a2a_r1": ("received", "agent_b", "TASK_STATE_WORKING", "processing"),
        "a2a_r2": ("received", "agent_c", "TASK_STATE_COMPLETED", "completed"),
        "a2a_s1": ("sent", "agent_b", "TASK_STATE_SUBMITTED", "queued"),
        "a2a_r3": ("received", "agent_b", "input-required", "processing"),  # raw kept as sent
    }
    r3 = Task.objects.get(task_id="a2a_r3")
    assert (r3.reason, r3.history_truncated_to) == ("input_required", None)
    assert Message.objects.filter(task=r3, source="a2a").count() == 3

    # Nothing changed: the first page of each direction, nothing else.
    calls, summary, _ = sync_once(standin)
    assert calls == {"list_user_tasks": 1, "a2a_list": 2}
    assert summary["created"] == summary["updated"] == 0

    # One task moves upstream: seen on its list page, read once, audited.
    standin.set_a2a_state("a2a_r3", "TASK_STATE_COMPLETED")
    calls, summary, _ = sync_once(standin)
    assert calls == {"list_user_tasks": 1, "a2a_list": 2, "a2a_get": 1}
    assert summary["updated"] == 1
    assert Task.objects.get(task_id="a2a_r3").status == "completed"
    (entry,) = AuditEntry.objects.filter(object_id="a2a_r3", action="task.state_changed")
    assert (entry.actor, entry.after["raw_state"]) == ("sync_beeos", "TASK_STATE_COMPLETED")


def test_a_task_between_two_configured_agents_counts_as_sent_by_its_caller(standin, settings):
    settings.BEEOS_A2A_AGENTS = [ME, "agent_b"]
    seed(standin, "a2a_pair", "agent_b", ME, "TASK_STATE_WORKING", 1)

    calls, _, _ = sync_once(standin)

    task = Task.objects.get(task_id="a2a_pair")
    assert (task.a2a_direction, task.a2a_counterpart) == ("sent", ME)
    # Listed twice (agent_b sent it, agent_a received it), read once.
    assert (calls["a2a_list"], calls["a2a_get"]) == (4, 1)


def test_a_truncated_history_says_so_on_the_detail_page(standin, client, support_user, settings):
    settings.BEEOS_A2A_HISTORY_LENGTH = 500  # more than the Cloud allows: asks for 200
    seed(standin, "a2a_long", "agent_b", ME, "TASK_STATE_WORKING", 1)
    standin.set_a2a_state("a2a_long", "TASK_STATE_WORKING", history=history("a2a_long", 250))
    seed(standin, "a2a_short", "agent_c", ME, "TASK_STATE_WORKING", 2)

    sync_once(standin)

    assert {r.query["history_length"][0] for r in a2a_gets(standin)} == {"200"}
    truncated = Task.objects.get(task_id="a2a_long")
    assert truncated.history_truncated_to == 200
    kept = Message.objects.filter(task=truncated, source="a2a")
    # The newest 200 of 250, not the default 50.
    assert kept.count() == 200
    assert not kept.filter(message_id="a2a_long-m049").exists()
    assert kept.filter(message_id="a2a_long-m050").exists()
    assert Task.objects.get(task_id="a2a_short").history_truncated_to is None

    client.force_login(support_user)
    page = client.get("/tasks/a2a_long/").content.decode()
    assert 'id="history-truncated"' in page
    assert "History truncated:" in page and "showing the newest 200 A2A history messages" in page
    assert 'id="history-truncated"' not in client.get("/tasks/a2a_short/").content.decode()


def test_direction_and_counterpart_filter_the_task_list_and_the_api(standin, client, support_user):
    seed_world(standin)
    sync_once(standin)
    client.force_login(support_user)

    listing = client.get("/tasks/?a2a_direction=sent").content.decode()
    assert "a2a_s1" in listing and "a2a_r1" not in listing
    listing = client.get("/tasks/?a2a_counterpart=agent_c").content.decode()
    assert "a2a_r2" in listing and "a2a_r1" not in listing and "a2a_s1" not in listing
    panel = client.get("/tasks/").content.decode()
    assert 'name="a2a_direction"' in panel and 'name="a2a_counterpart"' in panel

    _, key = tokens.issue(support_user, "test")
    auth = {"HTTP_AUTHORIZATION": f"Bearer {key}"}
    rows = client.get(
        "/api/v1/tasks/?a2a_direction=received&a2a_counterpart=agent_b", **auth
    ).json()["results"]
    assert sorted(r["task_id"] for r in rows) == ["a2a_r1", "a2a_r3"]
    bad = client.get("/api/v1/tasks/?a2a_direction=sideways", **auth)
    assert bad.status_code == 400


def _push(client, view: dict) -> None:
    """An A2A push as BeeOS sends it: a whole a2aTaskView, signed (webhooks guide §6)."""
    body = json.dumps(view).encode()
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


def test_an_a2a_push_flags_the_task_and_the_sync_rereads_it_with_its_history(
    standin, client, monkeypatch
):
    monkeypatch.setattr(sync, "A2A_PAGE", 2)
    seed_world(standin)
    sync_once(standin)
    # Deep in the received list (not on its first page): only the flag brings it back.
    view = standin.set_a2a_state("a2a_r1", "TASK_STATE_WORKING", history=history("a2a_r1", 9))
    _push(client, {**view, "history": view["history"][-1:]})  # the push carried one message
    inbox.drain()
    assert Task.objects.get(task_id="a2a_r1").resync_requested_at is not None

    calls, _, out = sync_once(standin)

    assert "re-read 1 webhook-flagged tasks" in out
    assert calls == {"list_user_tasks": 1, "a2a_list": 2, "a2a_get": 1}
    assert a2a_gets(standin)[0].path == f"/v1/a2a/{ME}/tasks/a2a_r1"  # through agent_a
    task = Task.objects.get(task_id="a2a_r1")
    assert task.resync_requested_at is None
    assert Message.objects.filter(task=task, source="a2a").count() == 9


def test_open_a2a_tasks_are_swept_and_a_404_marks_them_not_found_upstream(standin, settings):
    seed_world(standin)
    sync_once(standin)
    settings.BEEOS_SYNC_SWEEP = 10
    standin.fail(f"/v1/a2a/{ME}/tasks/a2a_r1", 404, {"code": "task_not_found", "message": "gone"})

    calls, summary, _ = sync_once(standin)

    # The open ones (r1, s1, r3), each read through the configured agent.
    assert calls == {"list_user_tasks": 1, "a2a_list": 2, "a2a_get": 3}
    assert summary["not found upstream"] == 1 and summary["errors"] == 0
    assert Task.objects.get(task_id="a2a_r1").upstream_missing_at is not None
    assert Task.objects.get(task_id="a2a_s1").upstream_missing_at is None


def test_the_counterpart_option_lists_only_the_tasks_exchanged_with_that_agent(standin):
    seed_world(standin)

    sync_once(standin, "--a2a-counterpart", "agent_c")

    assert {q["agent_id"][0] for q in a2a_lists(standin)} == {"agent_c"}
    assert set(Task.objects.filter(protocol="a2a").values_list("task_id", flat=True)) == {"a2a_r2"}


def test_a_cloud_that_refuses_the_key_stops_the_a2a_reads_only(standin, settings):
    seed_world(standin)
    standin.add_task("task_1", agent_id="agent_openapi", status="running", created_at=T0)
    settings.BEEOS_CLOUD_API_KEY = "bsk_wrong"
    out, err = io.StringIO(), io.StringIO()

    with pytest.raises(CommandError, match="1 upstream errors"):
        call_command("sync_beeos", "--once", stdout=out, stderr=err)

    assert "BeeOS Cloud refused the API key (check BEEOS_CLOUD_API_KEY); A2A reads stopped" in (
        err.getvalue()
    )
    assert len(a2a_lists(standin)) == 1  # no second direction, no reads
    assert Task.objects.filter(task_id="task_1").exists()  # the platform part went on
    assert not Task.objects.filter(protocol="a2a").exists()


def test_a_429_on_the_a2a_list_is_waited_out(standin, monkeypatch):
    seed_world(standin)
    waits: list[float] = []
    monkeypatch.setattr(
        command_module, "Syncer", lambda *a, **kw: sync.Syncer(*a, sleep=waits.append, **kw)
    )
    standin.rate_limit(f"/v1/a2a/{ME}/tasks", retry_after=3)

    _, summary, out = sync_once(standin)

    assert waits == [3] and "rate limited: waiting 3 s (Retry-After)" in out
    assert summary["errors"] == 0 and Task.objects.filter(protocol="a2a").count() == 4
