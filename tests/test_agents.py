"""Agents as first-class pages: maintained per-agent counts, the list, the agent page,
links to it everywhere, and who delegates to whom."""

from __future__ import annotations

import copy
import datetime as dt
import json
import re
from collections import Counter
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from beeos_console.agents import selectors
from beeos_console.ingest.services import ingest_records
from beeos_console.mirror import agent_counters
from beeos_console.mirror.models import AgentCount
from beeos_console.projection.reprojection import reproject_row
from tasks.models import Task
from tasks.services.write import ingest_a2a_task

from .factories import FEEDER, iso, make_a2a_task, make_task

pytestmark = pytest.mark.django_db

PINNED_FILE = Path(__file__).with_name("query_counts.json")


def a2a(caller: str, target: str, state: str = "TASK_STATE_COMPLETED", **extra):
    """An A2A task ``caller`` -> ``target`` created now (inside every window)."""
    now = timezone.now()
    return make_a2a_task(
        state,
        caller_agent_id=caller,
        target_agent_id=target,
        created_at=iso(now - dt.timedelta(minutes=5)),
        status={"state": state, "timestamp": iso(now - dt.timedelta(minutes=1))},
        **extra,
    )


def expected_counts() -> dict[tuple[str, str, str], int]:
    """What the counters must hold, counted from the task table the slow way."""
    found: Counter[tuple[str, str, str]] = Counter()
    for task in Task.objects.all():
        agents = set()
        for role, column in agent_counters.ROLE_COLUMNS.items():
            agent = getattr(task, column)
            if agent:
                found[(agent, role, task.status)] += 1
                agents.add(agent)
        for agent in agents:
            found[(agent, "", "")] += 1
    return {k: n for k, n in found.items() if n}


def stored_counts() -> dict[tuple[str, str, str], int]:
    rows = AgentCount.objects.values_list("agent_id", "role", "status", "count")
    return {(a, r, s): n for a, r, s, n in rows if n}


def test_counts_equal_the_tasks_after_writes_through_the_services():
    task = make_task("running", agent_id="agt_owner")
    make_task("failed", agent_id="agt_owner")
    a2a("agt_a", "agt_b", "TASK_STATE_WORKING")
    a2a("agt_a", "agt_b", "TASK_STATE_FAILED")
    a2a("agt_b", "agt_b")  # an agent calling itself counts once in "any role"
    # A state change moves the task between statuses.
    make_task("completed", agent_id="agt_owner", task_id=task.task_id, minutes_ago=1)
    assert stored_counts() == expected_counts()
    assert selectors.counts_of(["agt_b"])["agt_b"].total == 3


def test_the_batch_path_counts_as_the_one_record_path():
    now = timezone.now()
    records = [
        {
            "kind": "a2a_task",
            "data": {
                "id": f"batch_{i}",
                "contextId": f"ctx_b{i}",
                "status": {"state": state, "timestamp": iso(now - dt.timedelta(seconds=60 - i))},
                "caller_agent_id": f"agt_c{i % 2}",
                "target_agent_id": "agt_t",
                "created_at": iso(now - dt.timedelta(minutes=2)),
            },
        }
        for i, state in enumerate(
            ["TASK_STATE_WORKING", "TASK_STATE_COMPLETED", "TASK_STATE_FAILED"] * 3
        )
    ]
    ingest_records(copy.deepcopy(records), FEEDER)
    # The same ids again, newer: updates move counts.
    for i, record in enumerate(records):
        record["data"]["status"] = {
            "state": "TASK_STATE_CANCELED",
            "timestamp": iso(now + dt.timedelta(seconds=i)),
        }
    ingest_records(records, FEEDER)
    assert stored_counts() == expected_counts()
    assert stored_counts()[("agt_t", "target", "cancelled")] == 9


def test_rebuild_and_reprojection_keep_the_counts_true():
    make_task("running", agent_id="agt_r")
    a2a("agt_x", "agt_r")
    task = Task.objects.get(agent_id="agt_r", protocol="openapi")
    # A drifted stored status: re-projection puts it back and moves the counts with it.
    Task.objects.filter(pk=task.pk).update(status="failed")
    call_command("rebuild_counters", stdout=open("/dev/null", "w"))  # noqa: SIM115
    assert stored_counts() == expected_counts()
    reproject_row("task", task.pk, actor=FEEDER)
    assert stored_counts() == expected_counts()


def test_the_list_shows_every_agent_with_its_counts(client, support_user):
    a2a("agt_alpha", "agt_beta", "TASK_STATE_FAILED")
    a2a("agt_alpha", "agt_beta")
    make_task("completed", agent_id="agt_gamma")
    client.force_login(support_user)
    response = client.get("/agents/")
    assert response.status_code == 200
    html = response.content.decode()
    for agent in ("agt_alpha", "agt_beta", "agt_gamma"):
        assert f'href="/agents/{agent}/"' in html
    row = re.search(
        r'<tr id="agent-row-\d+">(?:(?!</tr>).)*agt_beta(?:(?!</tr>).)*</tr>', html, re.S
    )
    assert row and "failed" in row.group(0) and "completed" in row.group(0)


def test_the_list_pages_by_keyset(client, support_user):
    for i in range(55):
        make_task("completed", agent_id=f"agt_page_{i:02d}", minutes_ago=i)
    client.force_login(support_user)
    first = client.get("/agents/").content.decode()
    seen_first = set(re.findall(r'href="/agents/(agt_page_\d+)/"', first))
    assert len(seen_first) == 50
    older = re.search(r'<a href="([^"]+)"[^>]*rel="next"', first).group(1)
    second = client.get(older.replace("&amp;", "&")).content.decode()
    seen_second = set(re.findall(r'href="/agents/(agt_page_\d+)/"', second))
    assert len(seen_second) == 5 and not seen_first & seen_second
    assert client.get("/agents/?after=garbage").status_code == 400


def test_the_list_filters(client, support_user, settings):
    settings.CONSOLE_STUCK_AFTER_MINUTES = 30
    make_task("running", agent_id="agt_stuck_one", minutes_ago=600)  # stuck: old, running
    make_task("completed", agent_id="agt_quiet", minutes_ago=600)
    a2a("agt_fresh", "agt_quiet")
    client.force_login(support_user)

    def agents(query: str) -> set[str]:
        response = client.get(f"/agents/?{query}")
        assert response.status_code == 200, query
        return set(
            re.findall(r'class="agent-link" href="/agents/([^/"]+)/"', response.content.decode())
        )

    assert agents("q=stuck") == {"agt_stuck_one"}
    assert agents("stuck=true") == {"agt_stuck_one"}
    assert "agt_stuck_one" not in agents("stuck=false")
    assert agents("active_within=1h") == {"agt_fresh", "agt_quiet"}
    assert client.get("/agents/?active_within=forever").status_code == 400
    assert client.get("/agents/?sort=agent").status_code == 200


def test_agent_ids_link_to_their_page_everywhere(client, support_user):
    history = [{"messageId": "h-links", "role": "user", "parts": [{"text": "q"}]}]
    task = a2a("agt/with slash", "agt_target", history=history)
    client.force_login(support_user)
    listing = client.get("/tasks/").content.decode()
    assert 'href="/agents/agt_target/"' in listing
    detail = client.get(f"/tasks/{task.task_id}/?protocol=a2a").content.decode()
    # One encoded segment; in the facts and as the sender of the history message.
    assert detail.count('href="/agents/agt%2Fwith%20slash/"') == 2
    assert 'href="/agents/agt_target/"' in detail
    page = client.get("/agents/agt%2Fwith%20slash/")
    assert page.status_code == 200
    assert "agt/with slash" in page.content.decode()
    assert client.get("/agents/agt_nobody/").status_code == 404


def test_the_agent_page_shows_counts_stuck_work_and_task_links(client, support_user, settings):
    settings.CONSOLE_STUCK_AFTER_MINUTES = 30
    make_task("running", agent_id="agt_page", minutes_ago=600)
    a2a("agt_page", "agt_other", "TASK_STATE_FAILED")
    client.force_login(support_user)
    html = client.get("/agents/agt_page/").content.decode()
    assert 'id="agent-total">2<' in html
    assert 'id="stuck-banner"' in html
    assert 'href="/tasks/?caller_agent_id=agt_page"' in html
    assert 'href="/tasks/?target_agent_id=agt_page"' in html
    # The filtered task list shows only that agent's tasks as caller.
    listed = client.get("/tasks/?caller_agent_id=agt_page").content.decode()
    assert "agt_other" in listed


def test_who_delegates_to_whom_graph_table_and_edge_links(client, support_user):
    for _ in range(3):
        a2a("agt_boss", "agt_worker")
    a2a("agt_boss", "agt_worker", "TASK_STATE_FAILED")
    a2a("agt_boss", "agt_worker", "TASK_STATE_CANCELED")
    a2a("agt_client", "agt_boss")
    client.force_login(support_user)
    response = client.get("/agents/agt_boss/?window=1h")
    html = response.content.decode()
    assert response.status_code == 200
    svg = re.search(r"<svg class=\"delegation-graph\".*?</svg>", html, re.S).group(0)
    assert 'aria-labelledby="graph-title"' in svg and "<title" in svg
    assert "agt_worker" in svg and "agt_client" in svg
    table = re.search(r'<table class="list" id="delegation-table">.*?</table>', html, re.S).group(0)
    assert "5</a>" in table and "1 (20%)" in table and "dashed" in table
    pair = re.search(
        r'href="(/tasks/\?caller_agent_id=agt_boss&amp;target_agent_id=agt_worker[^"]*)"', table
    )
    url = pair.group(1).replace("&amp;", "&")
    query = parse_qs(urlsplit(url).query)
    assert "created_after" in query
    tasks = client.get(url)
    assert tasks.status_code == 200
    assert tasks.content.decode().count('class="agent-link" href="/agents/agt_worker/"') == 5
    # Tasks older than the window are left out; an unknown window is a 400.
    assert "no-delegation" not in client.get("/agents/agt_boss/?window=30d").content.decode()
    assert client.get("/agents/agt_boss/?window=1y").status_code == 400


def test_delegation_outside_the_window_is_not_shown(client, support_user):
    make_a2a_task("TASK_STATE_COMPLETED", caller_agent_id="agt_old", target_agent_id="agt_x")
    client.force_login(support_user)
    html = client.get("/agents/agt_old/?window=1h").content.decode()
    assert 'id="no-delegation"' in html


def _measure(client, url: str) -> int:
    with CaptureQueriesContext(connection) as ctx:
        response = client.get(url)
    assert response.status_code == 200
    for query in ctx.captured_queries:
        sql = query["sql"].upper()
        if "COUNT(" in sql and "AGENTCOUNT" not in sql:
            assert "LIMIT" in sql, query["sql"]
    return len(ctx.captured_queries)


@pytest.mark.parametrize("name", ["agents:list", "agents:detail"])
def test_query_counts_are_fixed_and_pinned(client, admin_user, name):
    client.force_login(admin_user)
    url = "/agents/" if name == "agents:list" else "/agents/agt_hub/?window=24h"

    def populate(n: int, tag: str) -> None:
        for i in range(n):
            a2a("agt_hub", f"agt_{tag}_{i}", "TASK_STATE_WORKING")
            a2a(f"agt_{tag}_c{i}", "agt_hub", "TASK_STATE_FAILED")

    populate(2, "s")
    small = _measure(client, url)
    populate(20, "b")
    big = _measure(client, url)
    assert small == big, f"{name}: {small} queries on few agents, {big} on many"
    assert json.loads(PINNED_FILE.read_text()).get(name) == big, f"{name}: {big} queries"


def test_a_task_write_never_counts_the_same_agent_twice_in_any_role():
    data = {
        "id": "a2a_self",
        "contextId": "ctx_self",
        "status": {"state": "TASK_STATE_WORKING", "timestamp": iso(timezone.now())},
        "caller_agent_id": "agt_self",
        "target_agent_id": "agt_self",
    }
    ingest_a2a_task(data, actor=FEEDER)
    assert stored_counts()[("agt_self", "", "")] == 1
