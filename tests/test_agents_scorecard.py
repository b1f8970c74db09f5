"""The agents' conformance scorecard (issue #17, point 5): each line counts what the mirror
holds, fails when it should, and its evidence link lists exactly the tasks it counted; the
background job and its button, the admins' ranking, and the /metrics source."""

from __future__ import annotations

import datetime as dt
import io
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from django.contrib.auth.models import Group
from django.core.management import call_command
from django.utils import timezone
from django_tasks_db.models import DBTaskResult
from prometheus_client.parser import text_string_to_metric_families

from beeos_console.agents import scorecard
from beeos_console.agents import tasks as jobs
from beeos_console.agents.models import AgentCard, AgentScorecard
from beeos_console.auditlog.models import AuditEntry
from beeos_console.auditlog.services import Actor
from beeos_console.cancels.models import CancelRequest
from beeos_console.core import roles
from beeos_console.projection import audit as projection_audit
from tasks.models import Task
from tasks.services.cancel import cancel_task
from tests.standin import BeeOSStandIn

from .factories import iso, make_a2a_task, make_message, make_task
from .test_agents import _measure
from .test_cancel_beeos import AGENT, CLOUD_KEY, KEY, a2a_pair, make_gateway

pytestmark = pytest.mark.django_db

PINNED_FILE = Path(__file__).with_name("query_counts.json")
OLGA = Actor("olga-operator")
CASE = "agt_case"
CLEAN = "agt_clean"
ROW = re.compile(r'id="task-row-(\d+)"')


def user(django_user_model, name: str, role: str):
    person = django_user_model.objects.create_user(username=name, password="x")
    person.groups.add(Group.objects.get_or_create(name=role)[0])
    return person


def clean_work() -> None:
    """An agent that follows the protocol: canonical states, deciding replies."""
    done = make_task("completed", agent_id=CLEAN)
    make_message(done, state="completed")
    make_task("running", agent_id=CLEAN)
    make_a2a_task("TASK_STATE_WORKING", target_agent_id=CLEAN)


def line(agent: str, key: str) -> dict:
    return AgentScorecard.objects.get(agent_id=agent).lines[key]


def evidence_rows(client, agent: str, key: str) -> set[int]:
    """The task rows the line's evidence link lists (fewer than a page here)."""
    url = scorecard.evidence_url(agent, key)
    response = client.get(url)
    assert response.status_code == 200, url
    return {int(pk) for pk in ROW.findall(response.content.decode())}


# --- each line, table-driven: it counts the right tasks, fails, and links to them ----------


def _pause(reason_state: str, resumed: str, *, a2a: bool = False) -> Callable[[], set[int]]:
    def seed() -> set[int]:
        now = timezone.now()
        if a2a:
            first = make_a2a_task(reason_state, target_agent_id=CASE)
        else:
            first = make_task(reason_state, agent_id=CASE, now=now, minutes_ago=200)
        # Paused since it was first mirrored two hours ago; then resumed.
        Task.objects.filter(pk=first.pk).update(first_seen_at=now - dt.timedelta(hours=2))
        if a2a:
            make_a2a_task(
                resumed,
                id=first.task_id,
                contextId=first.context_id,
                target_agent_id=CASE,
                status={"state": resumed, "timestamp": iso(now)},
            )
        else:
            make_task(resumed, agent_id=CASE, task_id=first.task_id, now=now, minutes_ago=0)
        # Still paused, for ten minutes now (short of the stuck limit on its own).
        second = make_task(reason_state, agent_id=CASE) if not a2a else None
        if second is not None:
            Task.objects.filter(pk=second.pk).update(first_seen_at=now - dt.timedelta(minutes=10))
        return {first.pk} | ({second.pk} if second else set())

    return seed


def _spellings() -> set[int]:
    tasks = [
        make_task("Completed", agent_id=CASE),  # letter case
        make_task("cancelled", agent_id=CASE),  # OpenAPI writes canceled
        make_a2a_task("TASK_STATE_CANCELLED", target_agent_id=CASE),  # A2A writes CANCELED
    ]
    make_task("completed", agent_id=CASE)  # canonical: not counted
    return {t.pk for t in tasks}


def _unmapped() -> set[int]:
    tasks = [make_task("exploded", agent_id=CASE), make_task("ARCHIVED", agent_id=CASE)]
    make_task("failed", agent_id=CASE)
    return {t.pk for t in tasks}


def _undecided() -> set[int]:
    streaming = make_task("completed", agent_id=CASE)
    make_message(streaming, state="streaming", stop_reason=None)
    request = make_task("completed", agent_id=CASE)
    make_message(request, type="chat_message", state="completed")
    decided = make_task("completed", agent_id=CASE)
    make_message(decided, state="completed")
    make_task("completed", agent_id=CASE)  # no envelopes: the rule does not apply
    return {streaming.pk, request.pk}


def _honoured_slowly() -> set[int]:
    tasks = [make_task("running", agent_id=CASE) for _ in range(2)]
    for task in tasks:
        outcome = cancel_task(task.protocol, task.task_id, actor=OLGA, reason="stop it")
        assert outcome.result == "cancelled", outcome.message
    request = CancelRequest.objects.get(object_id=tasks[0].task_id)
    CancelRequest.objects.filter(pk=request.pk).update(
        finished_at=request.created_at + dt.timedelta(minutes=20)
    )
    return {t.pk for t in tasks}


def _old_versions() -> set[int]:
    AgentCard.objects.create(
        agent_id=CASE,
        fetched_at=timezone.now(),
        outcome=AgentCard.Outcome.OK,
        raw_card={"name": "Case", "url": "https://a.example/rpc", "protocolVersion": "0.3"},
        protocol_versions=["0.3"],
        card_shape="0.3",
    )
    return set()


@dataclass(frozen=True)
class Case:
    key: str
    seed: Callable[[], set[int]]
    count: int
    level: int


CASES = [
    Case("non_canonical", _spellings, 3, scorecard.NOTE),
    Case("unmapped", _unmapped, 2, scorecard.FAILING),
    Case("no_deciding_reply", _undecided, 2, scorecard.FAILING),
    Case("input_required", _pause("input_required", "running"), 2, scorecard.NOTE),
    Case(
        "auth_required",
        _pause("TASK_STATE_AUTH_REQUIRED", "TASK_STATE_WORKING", a2a=True),
        1,
        scorecard.NOTE,
    ),
    Case("cancel_honoured", _honoured_slowly, 2, scorecard.NOTE),
    Case("protocol_versions", _old_versions, 1, scorecard.NOTE),
]


@pytest.mark.parametrize("case", CASES, ids=[c.key for c in CASES])
def test_each_line_counts_fails_and_links_to_exactly_its_tasks(case, client, support_user):
    clean_work()
    expected = case.seed()
    done = scorecard.score_agents()
    assert done["agents"] >= 2
    figure = line(CASE, case.key)
    assert (figure["count"], figure["level"]) == (case.count, case.level)
    card = AgentScorecard.objects.get(agent_id=CASE)
    assert (card.worst_line, card.worst_level) == (case.key, case.level)
    # The well-behaved agent passes every line.
    clean = AgentScorecard.objects.get(agent_id=CLEAN)
    assert clean.worst_level == scorecard.PASSES and clean.worst_line == ""
    assert {k: v["level"] for k, v in clean.lines.items()} == dict.fromkeys(clean.lines, 0)
    client.force_login(support_user)
    if case.key == "protocol_versions":
        assert scorecard.evidence_url(CASE, case.key) == f"/agents/{CASE}/#agent-card"
        return
    assert evidence_rows(client, CASE, case.key) == expected
    assert evidence_rows(client, CLEAN, case.key) == set()


def test_pause_times_come_from_the_audited_state_history():
    _pause("input_required", "running")()
    scorecard.score_agents()
    figure = line(CASE, "input_required")
    # Two hours paused then resumed; ten minutes paused and still waiting.
    assert 2 * 3600 - 5 < figure["max_seconds"] < 2 * 3600 + 60
    assert 600 - 5 < min(figure["median_seconds"], figure["p90_seconds"])
    assert figure["total_seconds"] == pytest.approx(2 * 3600 + 600, abs=60)


def test_a_short_pause_and_a_quick_cancel_pass(settings):
    settings.CONSOLE_STUCK_AFTER_MINUTES = 60
    make_task("input_required", agent_id=CASE)
    task = make_task("running", agent_id=CASE)
    cancel_task(task.protocol, task.task_id, actor=OLGA, reason="stop it")
    scorecard.score_agents()
    assert line(CASE, "input_required")["count"] == 1
    assert line(CASE, "input_required")["level"] == scorecard.PASSES
    assert line(CASE, "cancel_honoured")["count"] == 1
    assert line(CASE, "cancel_honoured")["level"] == scorecard.PASSES


def test_undecided_completions_are_the_audits_own_findings():
    """One rule: the scorecard's line is the audit's no-deciding-reply findings."""
    expected = _undecided()
    report = projection_audit.sweep()
    audited = {
        e["id"]
        for name in ("no_terminal_reply", "user_request_as_completion")
        for e in report.categories[name].examples
    }
    assert audited == set(Task.objects.filter(pk__in=expected).values_list("task_id", flat=True))
    scorecard.score_agents()
    assert line(CASE, "no_deciding_reply")["count"] == len(audited)


# --- A2A cancels through the real gateway against the stand-in ----------------------------


@pytest.fixture
def standin():
    with BeeOSStandIn(api_key=KEY, cloud_api_key=CLOUD_KEY) as server:
        yield server
    assert server.errors == []


A2A_CANCELS = [
    ("cancel_refused", -32002, "TASK_NOT_CANCELABLE", scorecard.NOTE),
    ("cancel_lost", -32010, "CONNECTION_LOST_AFTER_DISPATCH", scorecard.WARNING),
    ("cancel_timed_out", -32011, "TASK_TIMEOUT", scorecard.WARNING),
]


@pytest.mark.parametrize(("key", "code", "reason", "level"), A2A_CANCELS)
def test_how_a2a_cancels_ended(standin, client, support_user, key, code, reason, level):
    gw = make_gateway(standin)
    hit = a2a_pair(standin, upstream_state="TASK_STATE_WORKING", mirror_state="working")
    other = a2a_pair(standin, upstream_state="TASK_STATE_WORKING", mirror_state="working")
    assert hit.agent_id == other.agent_id == AGENT
    standin.a2a_error(code, reason, "no", status=200, jsonrpc=True)
    cancel_task(hit.protocol, hit.task_id, actor=OLGA, reason="stop", gw=gw)
    cancel_task(other.protocol, other.task_id, actor=OLGA, reason="stop", gw=gw)  # accepted
    scorecard.score_agents()
    figure = line(AGENT, key)
    assert (figure["count"], figure["level"]) == (1, level)
    assert figure["max_seconds"] < 60
    assert line(AGENT, "cancel_honoured")["count"] == 1
    client.force_login(support_user)
    assert evidence_rows(client, AGENT, key) == {hit.pk}
    assert evidence_rows(client, AGENT, "cancel_honoured") == {other.pk}


# --- the agent page, the ranking, the job ---------------------------------------------------


def test_the_agent_page_shows_each_line_in_words_with_its_evidence(client, support_user):
    _unmapped()
    scorecard.score_agents()
    client.force_login(support_user)
    html = client.get(f"/agents/{CASE}/").content.decode()
    assert 'id="scorecard-table"' in html
    row = re.search(r'<tr id="score-unmapped" data-level="3">(.*?)</tr>', html, re.S).group(1)
    assert "States no table knows (unmapped)" in row and "failing" in row
    assert f'href="/tasks/?agent_id={CASE}&amp;conformance=unmapped"' in row
    assert 'id="score-now"' not in html  # support staff do not queue jobs


def test_an_agent_not_scored_yet_says_so(client, support_user):
    make_task("running", agent_id=CASE)
    client.force_login(support_user)
    assert 'id="no-scorecard"' in client.get(f"/agents/{CASE}/").content.decode()


def test_admins_see_agents_ranked_by_their_worst_line(client, django_user_model):
    clean_work()
    make_task("Completed", agent_id="agt_note")  # a note
    make_task("exploded", agent_id="agt_bad")  # failing, once
    for _ in range(3):
        make_task("exploded", agent_id="agt_worse")  # failing, three times
    scorecard.score_agents()
    client.force_login(user(django_user_model, "ada2", roles.ADMIN))
    response = client.get("/scorecards/")
    assert response.status_code == 200
    html = response.content.decode()
    order = re.findall(
        r'class="agent-link" href="/agents/([^/"]+)/"', html.split('id="results"', 1)[1]
    )
    ranked = [a for a in dict.fromkeys(order) if a in ("agt_worse", "agt_bad", "agt_note", CLEAN)]
    assert ranked == ["agt_worse", "agt_bad", "agt_note", CLEAN]
    assert "see the tasks" in html
    # Filters keep the lists' URL state: only agents failing a line, by worst line.
    html = client.get("/scorecards/?failing=true&worst_line=unmapped").content.decode()
    assert "agt_worse" in html and "agt_note" not in html and CLEAN not in html
    # Keyset pages like every list.
    for n in range(60):
        make_task("Completed", agent_id=f"agt_page_{n:02d}")
    scorecard.score_agents()
    first = client.get("/scorecards/").content.decode()
    assert "after=" in first and "agt_worse" in first


@pytest.mark.parametrize("role", [roles.SUPPORT, roles.OPERATOR])
def test_the_ranking_is_for_admins_only(client, django_user_model, role):
    client.force_login(user(django_user_model, f"not-admin-{role}", role))
    assert client.get("/scorecards/").status_code == 403


def test_the_button_queues_one_job_audited_and_the_worker_scores(client, django_user_model):
    make_task("exploded", agent_id=CASE)
    client.force_login(user(django_user_model, "support-no", roles.SUPPORT))
    assert client.post("/scorecards/run/", {"agent_id": CASE}).status_code == 403
    client.force_login(user(django_user_model, "olga2", roles.OPERATOR))
    response = client.post("/scorecards/run/", {"agent_id": CASE})
    assert response.status_code == 302 and response["Location"] == f"/agents/{CASE}/"
    client.post("/scorecards/run/", {"agent_id": CASE})  # already waiting: not queued twice
    waiting = DBTaskResult.objects.filter(task_path=jobs.score_agents.module_path)
    assert waiting.count() == 1
    entries = AuditEntry.objects.filter(action="agent.scorecard_requested")
    assert [e.detail["queued"] for e in entries.order_by("pk")] == [True, False]
    assert entries.first().actor == "olga2"
    assert client.get("/scorecards/run/").status_code == 405
    # The job's work, run here as the worker would run it.
    assert jobs.score_agents.call()["agents"] == 1
    assert AgentScorecard.objects.get(agent_id=CASE).worst_line == "unmapped"


@pytest.mark.django_db(transaction=True)
def test_the_database_worker_runs_the_queued_job():
    make_task("exploded", agent_id=CASE)
    assert jobs.request_scoring() is True
    call_command("db_worker", "--batch", "--no-startup-delay", verbosity=0)
    result = DBTaskResult.objects.get(task_path=jobs.score_agents.module_path)
    assert result.return_value == {"agents": 1, "not_passing": 1, "removed": 0}
    assert AgentScorecard.objects.get(agent_id=CASE).worst_line == "unmapped"


def test_the_sync_schedule_and_the_command(settings):
    make_task("exploded", agent_id=CASE)
    settings.AGENT_SCORECARD_EVERY_SECONDS = 900
    assert jobs.schedule_scoring() == "agent scorecards: job queued"
    assert jobs.schedule_scoring() == "agent scorecards: a job is already waiting"
    out = io.StringIO()
    call_command("score_agents", stdout=out)
    assert "scored 1 agents" in out.getvalue() and "1 with a line" in out.getvalue()
    DBTaskResult.objects.all().delete()
    assert jobs.schedule_scoring() is None  # scored a moment ago
    settings.AGENT_SCORECARD_EVERY_SECONDS = 0
    AgentScorecard.objects.update(computed_at=timezone.now() - dt.timedelta(days=1))
    assert jobs.schedule_scoring() is None  # on demand only


def test_agents_no_longer_seen_lose_their_scorecard():
    AgentScorecard.objects.create(agent_id="agt_gone", computed_at=timezone.now())
    make_task("running", agent_id=CASE)
    assert scorecard.score_agents()["removed"] == 1
    assert list(AgentScorecard.objects.values_list("agent_id", flat=True)) == [CASE]


# --- /metrics ----------------------------------------------------------------------------------


def test_metrics_export_line_totals_and_agents_not_passing(client, settings, monkeypatch):
    monkeypatch.delenv("PROMETHEUS_MULTIPROC_DIR", raising=False)
    settings.METRICS_TOKEN = "metrics-" + "s" * 40
    settings.METRICS_BIND = ""
    clean_work()
    make_task("exploded", agent_id=CASE)
    make_task("exploded", agent_id="agt_other")
    make_task("Completed", agent_id="agt_other")

    def scrape() -> dict:
        response = client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {settings.METRICS_TOKEN}")
        assert response.status_code == 200
        text = response.content.decode()
        return {f.name: f for f in text_string_to_metric_families(text)}

    def by_line(families: dict, name: str) -> dict[str, float]:
        return {s.labels["line"]: s.value for s in families[name].samples}

    before = scrape()
    assert before["beeos_console_agent_scorecard_agents"].samples[0].value == 0
    assert set(by_line(before, "beeos_console_agent_scorecard_tasks").values()) == {0}
    scorecard.score_agents()
    families = scrape()
    tasks = by_line(families, "beeos_console_agent_scorecard_tasks")
    failing = by_line(families, "beeos_console_agent_scorecard_agents_not_passing")
    assert set(tasks) == set(failing) == {line.key for line in scorecard.LINES}
    assert (tasks["unmapped"], failing["unmapped"]) == (2, 2)
    assert (tasks["non_canonical"], failing["non_canonical"]) == (1, 1)
    assert failing["no_deciding_reply"] == 0
    # agt_caller (the A2A caller of clean_work) is scored too: every agent a task names.
    assert families["beeos_console_agent_scorecard_agents"].samples[0].value == 4
    stamp = families["beeos_console_agent_scorecard_computed_timestamp_seconds"].samples[0].value
    assert abs(stamp - timezone.now().timestamp()) < 60
    up = {s.labels["source"]: s.value for s in families["beeos_console_metrics_source_up"].samples}
    assert up["agent_scorecard"] == 1


# --- query counts -------------------------------------------------------------------------------


def test_the_ranking_query_count_is_fixed_and_pinned(client, admin_user):
    client.force_login(admin_user)
    for n in range(2):
        make_task("exploded", agent_id=f"agt_q_{n}")
    scorecard.score_agents()
    small = _measure(client, "/scorecards/")
    for n in range(30):
        make_task("Completed", agent_id=f"agt_q_big_{n}")
    scorecard.score_agents()
    big = _measure(client, "/scorecards/")
    assert small == big, f"{small} queries on few agents, {big} on many"
    assert json.loads(PINNED_FILE.read_text()).get("agents:scorecards") == big
