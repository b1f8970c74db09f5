"""The agent cards' schedule (issue #17, point 2: "re-read by the sync on a schedule"):
after each `sync_beeos` pass the cards whose last read is older than
``AGENT_CARD_REFRESH_SECONDS`` are read again by the worker's ``refresh_agent_cards`` job,
and only those; scheduled reads are audited when something changed, not every hour.

Over real HTTP against the stand-in Cloud (beeos-cloud-sdk); the worker is django-tasks'
own ``db_worker``.
"""

from __future__ import annotations

import datetime as dt
import io
import re

import psycopg
import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.utils import timezone
from django_tasks_db.models import DBTaskResult

from beeos_console.agents import services
from beeos_console.agents import tasks as card_tasks
from beeos_console.agents.models import AgentCard
from beeos_console.auditlog.models import AuditEntry
from beeos_console.auditlog.services import Actor
from tests.standin import BeeOSStandIn

KEY = "bsk_card_schedule"
JOB = "beeos_console.agents.tasks.refresh_agent_cards"
CARD_PATH = re.compile(r"^/v1/a2a/(?P<agent>[^/]+)/\.well-known/agent(-card)?\.json$")
HOUR = 3600


@pytest.fixture
def standin(settings):
    with BeeOSStandIn(api_key=KEY) as server:
        settings.BEEOS_API_URL = server.url
        settings.BEEOS_API_KEY = KEY
        settings.BEEOS_CLOUD_URL = server.cloud_url
        settings.BEEOS_CLOUD_API_KEY = KEY
        settings.BEEOS_A2A_AGENTS = []
        settings.BEEOS_INSTANCES = []
        settings.BEEOS_SYNC_SWEEP = 0
        settings.AGENT_CARD_REFRESH_SECONDS = HOUR
        yield server
    assert server.errors == []


def sync_pass() -> str:
    out = io.StringIO()
    call_command("sync_beeos", "--once", stdout=out, stderr=io.StringIO())
    return out.getvalue()


def run_worker() -> None:
    call_command("db_worker", "--batch", "--no-startup-delay", verbosity=0)


def cards_read(server: BeeOSStandIn) -> list[str]:
    """The agents whose card the stand-in was asked for (either path), in order."""
    found = [CARD_PATH.match(r.path) for r in server.requests_to("GET", "/v1/a2a/*")]
    return [m["agent"] for m in found if m]


def read_now(*agents: str) -> None:
    for agent in agents:
        services.refresh_card(agent, actor=Actor.system("test"))


def age(agent: str, seconds: float) -> None:
    """Make the agent's last card read ``seconds`` old."""
    then = timezone.now() - dt.timedelta(seconds=seconds)
    AgentCard.objects.filter(agent_id=agent).update(fetched_at=then)


def waiting_jobs() -> int:
    return DBTaskResult.objects.filter(task_path=JOB, status="READY").count()


@pytest.mark.django_db(transaction=True)
def test_a_sync_pass_has_the_worker_read_the_due_cards_and_only_those(standin, settings):
    settings.BEEOS_A2A_AGENTS = ["agt_new"]  # configured, its card never read
    for agent in ("agt_new", "agt_fresh", "agt_stale"):
        standin.set_agent_card(agent)
    read_now("agt_fresh", "agt_stale")
    age("agt_stale", HOUR + 60)
    standin.clear_requests()

    out = sync_pass()
    # The pass itself reads no card: it leaves one job for the worker.
    assert "agent cards: 2 due for a re-read (job queued)" in out
    assert cards_read(standin) == [] and waiting_jobs() == 1
    run_worker()
    assert sorted(cards_read(standin)) == ["agt_new", "agt_stale"]
    assert DBTaskResult.objects.get(task_path=JOB).return_value == {
        "agt_new": "ok",
        "agt_stale": "ok",
    }
    stale = AgentCard.objects.get(agent_id="agt_stale")
    assert timezone.now() - stale.fetched_at < dt.timedelta(minutes=5)

    # Right after: nothing is due, no job, no read.
    standin.clear_requests()
    assert "agent cards" not in sync_pass()
    assert waiting_jobs() == 0
    run_worker()
    assert cards_read(standin) == []

    # A card whose last read is older than the interval is read again, alone.
    age("agt_fresh", HOUR + 1)
    assert "agent cards: 1 due" in sync_pass()
    run_worker()
    assert cards_read(standin) == ["agt_fresh"]
    connection.close()


@pytest.mark.django_db
def test_passes_keep_one_job_waiting_and_0_turns_the_schedule_off(standin, settings):
    standin.set_agent_card("agt_due")
    read_now("agt_due")
    age("agt_due", 2 * HOUR)
    assert "(job queued)" in sync_pass()
    # No worker ran: the next passes find the job waiting and add none.
    assert "(a job is already waiting)" in sync_pass()
    sync_pass()
    assert waiting_jobs() == 1

    DBTaskResult.objects.all().delete()
    settings.AGENT_CARD_REFRESH_SECONDS = 0
    assert "agent cards" not in sync_pass()
    assert waiting_jobs() == 0 and services.due_agents() == []
    # Without a Cloud there is nothing to read the cards from.
    settings.AGENT_CARD_REFRESH_SECONDS = HOUR
    settings.BEEOS_CLOUD_URL = ""
    assert "agent cards" not in sync_pass()
    assert waiting_jobs() == 0


@pytest.mark.django_db
def test_scheduled_reads_are_audited_when_something_changed_not_every_hour(standin):
    standin.set_agent_card("agt_audit", version="3")
    read_now("agt_audit")  # a read before (audited: always, as an operator's is)
    entries = AuditEntry.objects.filter(action="agent.card_read", object_id="agt_audit")
    assert entries.count() == 1

    def scheduled_read() -> dict[str, str]:
        age("agt_audit", HOUR + 1)
        return card_tasks.refresh_agent_cards.call()

    # Hourly reads of the same card write nothing.
    assert scheduled_read() == {"agt_audit": "ok"}
    assert scheduled_read() == {"agt_audit": "ok"}
    assert entries.count() == 1
    # A new card is worth an entry: which version it replaced.
    standin.set_agent_card("agt_audit", version="4")
    scheduled_read()
    newest = entries.order_by("-pk").first()
    assert entries.count() == 2 and (newest.actor, newest.actor_kind) == ("agent-cards", "system")
    assert (newest.before, newest.after) == (
        {"outcome": "ok", "version": "3"},
        {"outcome": "ok", "version": "4"},
    )
    # An outcome change is audited once; the same failure hour after hour is counted only.
    standin.set_agent_card("agt_audit", a2a_enabled=False)
    scheduled_read()
    scheduled_read()
    assert entries.count() == 3
    assert entries.order_by("-pk").first().after == {"outcome": "a2a_disabled"}
    card = AgentCard.objects.get(agent_id="agt_audit")
    assert card.consecutive_failures == 2 and card.version == "4"


@pytest.mark.django_db
def test_one_job_reads_at_a_time(standin):
    standin.set_agent_card("agt_locked")
    read_now("agt_locked")
    age("agt_locked", 2 * HOUR)
    standin.clear_requests()
    params = connection.get_connection_params()
    params.pop("cursor_factory", None)
    with psycopg.connect(**params, autocommit=True) as other:
        # Another job (another worker's connection) is reading cards.
        other.execute("SELECT pg_advisory_lock(%s)", [card_tasks.READING_LOCK_KEY])
        assert card_tasks.refresh_agent_cards.call() == {}
        assert cards_read(standin) == []
        other.execute("SELECT pg_advisory_unlock(%s)", [card_tasks.READING_LOCK_KEY])
    assert card_tasks.refresh_agent_cards.call() == {"agt_locked": "ok"}
    assert cards_read(standin) == ["agt_locked"]


@pytest.mark.django_db
def test_refresh_agent_cards_due_is_the_jobs_read_for_cron(standin):
    for agent in ("agt_cron_old", "agt_cron_new"):
        standin.set_agent_card(agent)
    read_now("agt_cron_old", "agt_cron_new")
    age("agt_cron_old", 2 * HOUR)
    standin.clear_requests()
    out = io.StringIO()
    call_command("refresh_agent_cards", "--due", stdout=out)
    assert out.getvalue() == "agt_cron_old: ok\n"
    assert cards_read(standin) == ["agt_cron_old"]
    with pytest.raises(CommandError, match="not both"):
        call_command("refresh_agent_cards", "--due", "agt_cron_new")


@pytest.mark.django_db
def test_a_broken_after_pass_hook_is_a_counted_error(standin, settings):
    settings.BEEOS_SYNC_AFTER_PASS = [
        "beeos_console.agents.tasks.no_such_hook",
        "beeos_console.agents.tasks.schedule_card_reads",
    ]
    standin.set_agent_card("agt_after_broken")
    read_now("agt_after_broken")
    age("agt_after_broken", 2 * HOUR)
    out, err = io.StringIO(), io.StringIO()
    with pytest.raises(CommandError, match="1 upstream errors"):
        call_command("sync_beeos", "--once", stdout=out, stderr=err)
    assert "after the pass, beeos_console.agents.tasks.no_such_hook: ImportError" in err.getvalue()
    # The hooks after it still ran.
    assert "agent cards: 1 due" in out.getvalue() and waiting_jobs() == 1
