"""Agent cards read with beeos-cloud-sdk over real HTTP from the stand-in Cloud (seed 003):
both paths, both shapes, ``403 a2a_disabled``, JSON-RPC ``-32007``, unreachable; the
operator's re-read (audited, role-gated, htmx and plain POST) and the scheduled one."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command
from django.test import Client

from beeos_console.agents import services
from beeos_console.agents.models import AgentCard
from beeos_console.agents.tasks import refresh_agent_cards
from beeos_console.auditlog.models import AuditEntry
from beeos_console.auditlog.services import Actor
from tests.standin import BeeOSStandIn

from .factories import make_task

pytestmark = pytest.mark.django_db

KEY = "bsk_cards_test"
SYSTEM = Actor.system("test")


@pytest.fixture
def cloud(settings):
    with BeeOSStandIn(api_key=KEY) as server:
        settings.BEEOS_CLOUD_URL = server.cloud_url
        settings.BEEOS_CLOUD_API_KEY = KEY
        settings.BEEOS_A2A_AGENTS = []
        yield server


def test_a_10_card_is_read_and_parsed(cloud):
    cloud.set_agent_card("agt_new", name="Travel desk", version="7")
    card = services.refresh_card("agt_new", actor=SYSTEM)
    assert card.outcome == AgentCard.Outcome.OK
    assert card.path.endswith("agent-card.json")
    assert (card.name, card.version, card.card_shape) == ("Travel desk", "7", "1.0")
    assert card.input_modes == ["text/plain"]
    assert card.output_modes == ["text/plain", "application/json"]
    assert card.protocol_versions == ["1.0"]
    assert card.interfaces[0]["protocolBinding"] == "JSONRPC"
    assert card.raw_card["supportedInterfaces"][0]["url"].endswith("/a2a/agt_new")


def test_a_03_card_is_read_and_parsed(cloud):
    cloud.set_agent_card("agt_old", shape="0.3")
    card = services.refresh_card("agt_old", actor=SYSTEM)
    assert (card.outcome, card.card_shape, card.protocol_versions) == ("ok", "0.3", ["0.3"])
    assert card.interfaces[0]["url"].endswith("/a2a/agt_old")


def test_an_older_cloud_answers_on_the_legacy_path(cloud):
    cloud.set_agent_card("agt_legacy", legacy_only=True)
    card = services.refresh_card("agt_legacy", actor=SYSTEM)
    assert card.outcome == "ok" and card.path.endswith("agent.json")
    assert len(cloud.requests_to("GET", "*/agent-card.json")) == 1
    assert len(cloud.requests_to("GET", "*/agent.json")) == 1


def test_a2a_disabled_and_no_card_are_told_apart(cloud):
    cloud.set_agent_card("agt_off", a2a_enabled=False)
    cloud.set_agent_card("agt_blank", configured=False)
    off = services.refresh_card("agt_off", actor=SYSTEM)
    blank = services.refresh_card("agt_blank", actor=SYSTEM)
    assert (off.outcome, off.failure_detail) == ("a2a_disabled", "HTTP 403 a2a_disabled")
    assert blank.outcome == "not_configured" and "-32007" in blank.failure_detail
    # Neither falls back to the legacy path: the Cloud answered.
    assert not cloud.requests_to("GET", "*/agent.json")


def test_unreachable_counts_failures_and_keeps_the_last_good_card(cloud):
    cloud.set_agent_card("agt_flaky", name="Flaky")
    services.refresh_card("agt_flaky", actor=SYSTEM)
    cloud.stop()
    services.refresh_card("agt_flaky", actor=SYSTEM)
    card = services.refresh_card("agt_flaky", actor=SYSTEM)
    assert card.outcome == "unreachable"
    assert card.consecutive_failures == 2
    assert card.name == "Flaky" and card.last_success_at is not None
    cloud.start()


def test_the_agent_page_shows_the_card_and_failures_in_words(cloud, client, support_user):
    make_task("completed", agent_id="agt_shown")
    make_task("completed", agent_id="agt_disabled")
    cloud.set_agent_card("agt_shown", name="Shown <b>desk</b>", description="Books trips.")
    cloud.set_agent_card("agt_disabled", a2a_enabled=False)
    services.refresh_card("agt_shown", actor=SYSTEM)
    services.refresh_card("agt_disabled", actor=SYSTEM)
    client.force_login(support_user)
    html = client.get("/agents/agt_shown/").content.decode()
    assert "Shown &lt;b&gt;desk&lt;/b&gt;" in html and "Books trips." in html
    assert "<details" in html and "supportedInterfaces" in html
    assert "text/plain" in html and "JSONRPC" in html
    disabled = client.get("/agents/agt_disabled/").content.decode()
    assert "A2A is switched off for this agent." in disabled
    # Support staff read the card but are not offered the re-read.
    assert "Read the card again now" not in html


def test_operators_re_read_on_demand_audited(cloud, client, operator_user):
    make_task("completed", agent_id="agt_ondemand")
    cloud.set_agent_card("agt_ondemand", configured=False)
    client.force_login(operator_user)
    page = client.get("/agents/agt_ondemand/").content.decode()
    assert "Read the card again now" in page
    # Plain POST (no JavaScript): back to the page with the outcome.
    response = client.post("/agents/agt_ondemand/card/refresh/")
    assert response.status_code == 302 and response["Location"] == "/agents/agt_ondemand/"
    assert AgentCard.objects.get(agent_id="agt_ondemand").outcome == "not_configured"
    # htmx: the card section alone, now read.
    cloud.set_agent_card("agt_ondemand", name="Configured now")
    fragment = client.post(
        "/agents/agt_ondemand/card/refresh/", HTTP_HX_REQUEST="true", HTTP_HX_TARGET="agent-card"
    )
    assert fragment.status_code == 200
    body = fragment.content.decode()
    assert body.lstrip().startswith('<section class="card" id="agent-card"')
    assert "Configured now" in body
    entries = AuditEntry.objects.filter(action="agent.card_read", object_id="agt_ondemand")
    assert entries.count() == 2
    assert {e.actor for e in entries} == {operator_user.get_username()}


def test_support_may_not_re_read_and_csrf_is_enforced(cloud, client, support_user, operator_user):
    cloud.set_agent_card("agt_locked")
    client.force_login(support_user)
    assert client.post("/agents/agt_locked/card/refresh/").status_code == 403
    assert not AgentCard.objects.filter(agent_id="agt_locked").exists()
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(operator_user)
    assert strict.post("/agents/agt_locked/card/refresh/").status_code == 403


def test_the_schedule_re_reads_and_audits_only_changes(cloud, settings):
    settings.BEEOS_A2A_AGENTS = ["agt_sched"]
    cloud.set_agent_card("agt_sched")
    out = io.StringIO()
    call_command("refresh_agent_cards", stdout=out)
    assert "agt_sched: ok" in out.getvalue()
    services.refresh_cards()  # same outcome: not audited again
    assert AuditEntry.objects.filter(action="agent.card_read", object_id="agt_sched").count() == 1
    cloud.set_agent_card("agt_sched", a2a_enabled=False)
    assert services.refresh_cards() == {"agt_sched": "a2a_disabled"}
    assert AuditEntry.objects.filter(action="agent.card_read", object_id="agt_sched").count() == 2


def test_the_background_task_runs_the_schedule(cloud, settings):
    settings.BEEOS_A2A_AGENTS = ["agt_bg"]
    cloud.set_agent_card("agt_bg", shape="0.3")
    assert refresh_agent_cards.call() == {"agt_bg": "ok"}
