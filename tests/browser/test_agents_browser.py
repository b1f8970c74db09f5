"""Agents in Chromium: the list, an agent page with its card, the delegation graph and its
edge links; the operator's re-read through htmx."""

from __future__ import annotations

import datetime as dt
import re

import pytest
from django.contrib.auth.models import Group
from django.utils import timezone
from playwright.sync_api import Page, expect

from beeos_console.agents import services
from beeos_console.auditlog.services import Actor
from beeos_console.core import roles
from tasks.services.write import ingest_a2a_task
from tests.standin import BeeOSStandIn

from .conftest import login
from .test_console_flows import PASSWORD

KEY = "bsk_browser_cards"


def iso(value: dt.datetime) -> str:
    return value.isoformat().replace("+00:00", "Z")


def a2a(n: int, caller: str, target: str, state: str) -> None:
    now = timezone.now()
    data = {
        "id": f"a2a_browser_{n}",
        "contextId": f"ctx_browser_{n}",
        "status": {"state": state, "timestamp": iso(now - dt.timedelta(minutes=1))},
        "caller_agent_id": caller,
        "target_agent_id": target,
        "created_at": iso(now - dt.timedelta(minutes=3)),
    }
    ingest_a2a_task(data, actor=Actor.system())


@pytest.fixture
def cloud(settings):
    with BeeOSStandIn(api_key=KEY) as server:
        settings.BEEOS_CLOUD_URL = server.cloud_url
        settings.BEEOS_CLOUD_API_KEY = KEY
        yield server


@pytest.fixture
def seeded(cloud) -> None:
    states = ["TASK_STATE_COMPLETED", "TASK_STATE_FAILED", "TASK_STATE_COMPLETED"]
    for n, state in enumerate(states):
        a2a(n, "agt_dispatch", "agt_hotel", state)
    a2a(10, "agt_front_desk", "agt_dispatch", "TASK_STATE_WORKING")
    cloud.set_agent_card("agt_dispatch", name="Dispatch desk", description="Routes trips.")
    services.refresh_card("agt_dispatch", actor=Actor.system())


def log_in_as(page: Page, live_server, django_user_model, name: str, role: str) -> None:
    user = django_user_model.objects.create_user(username=name, password=PASSWORD)
    user.groups.add(Group.objects.get_or_create(name=role)[0])
    login(page, live_server, name, PASSWORD)


def test_list_agent_page_graph_and_edge_links(page: Page, live_server, django_user_model, seeded):
    log_in_as(page, live_server, django_user_model, "sue-agents", roles.SUPPORT)
    page.goto(f"{live_server.url}/tasks/")
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Agents").click()
    expect(page).to_have_url(f"{live_server.url}/agents/")
    row = page.locator("tr", has=page.locator('a.agent-link[href="/agents/agt_hotel/"]'))
    expect(row).to_contain_text("failed")
    page.locator('a.agent-link[href="/agents/agt_dispatch/"]').first.click()
    expect(page.get_by_role("heading", level=1)).to_contain_text("agt_dispatch")
    card = page.locator("#agent-card")
    expect(card).to_contain_text("Dispatch desk")
    expect(card.locator("details pre")).to_be_hidden()
    card.get_by_text("Raw agent card (JSON)").click()
    expect(card.locator("details pre")).to_contain_text("supportedInterfaces")
    # The graph: an accessible name, both counterparts, an edge link per pair.
    graph = page.locator("svg.delegation-graph")
    expect(graph).to_be_visible()
    expect(graph.locator("title#graph-title")).to_contain_text("agt_dispatch")
    expect(graph).to_contain_text("agt_hotel")
    expect(graph).to_contain_text("agt_front_desk")
    table = page.locator("#delegation-table")
    expect(table).to_contain_text("1 (33%)")
    page.locator("#delegation-table a.pair-link").first.click()
    expect(page).to_have_url(re.compile(r"target_agent_id=agt_"))
    expect(page.locator("table.list tbody tr")).to_have_count(1)


def test_the_window_switch_and_an_operator_re_read(
    page: Page, live_server, django_user_model, seeded, cloud
):
    log_in_as(page, live_server, django_user_model, "olga-agents", roles.OPERATOR)
    page.goto(f"{live_server.url}/agents/agt_dispatch/")
    page.locator(".window-links").get_by_role("link", name="last 1 h").click()
    expect(page).to_have_url(re.compile(r"\?window=1h$"))
    expect(page.locator("svg.delegation-graph")).to_be_visible()
    cloud.set_agent_card("agt_dispatch", a2a_enabled=False)
    page.get_by_role("button", name="Read the card again now").click()
    expect(page.locator("#agent-card")).to_contain_text("A2A is switched off for this agent.")
    # Still the last good card below the failure.
    expect(page.locator("#agent-card")).to_contain_text("Dispatch desk")
