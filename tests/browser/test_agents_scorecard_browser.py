"""The conformance scorecard in Chromium: an agent page's lines, an evidence link that opens
the task list showing exactly the rows behind a line, an operator queueing a new scoring,
and the admins' ranking."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import Group
from playwright.sync_api import Page, expect

from beeos_console.agents import scorecard
from beeos_console.core import roles
from tests.factories import make_message, make_task

from .conftest import login
from .test_console_flows import PASSWORD

AGENT = "agt_sloppy"


@pytest.fixture
def scored(transactional_db) -> dict[str, list[str]]:
    unmapped = [make_task("exploded", agent_id=AGENT), make_task("ARCHIVED", agent_id=AGENT)]
    spelled = [make_task("Completed", agent_id=AGENT)]
    fine = make_task("completed", agent_id=AGENT)
    make_message(fine, state="completed")
    make_task("exploded", agent_id="agt_someone_else")
    scorecard.score_agents()
    return {
        "unmapped": [t.task_id for t in unmapped],
        "non_canonical": [t.task_id for t in spelled],
        "fine": [fine.task_id],
    }


def log_in_as(page: Page, live_server, django_user_model, name: str, role: str) -> None:
    user = django_user_model.objects.create_user(username=name, password=PASSWORD)
    user.groups.add(Group.objects.get_or_create(name=role)[0])
    login(page, live_server, name, PASSWORD)


def test_an_evidence_link_opens_exactly_the_rows_behind_a_line(
    page: Page, live_server, django_user_model, scored
):
    log_in_as(page, live_server, django_user_model, "sue-score", roles.SUPPORT)
    page.goto(f"{live_server.url}/agents/{AGENT}/")
    table = page.locator("#scorecard-table")
    expect(table).to_be_visible()
    unmapped = table.locator("#score-unmapped")
    expect(unmapped).to_contain_text("States no table knows (unmapped)")
    expect(unmapped).to_contain_text("failing")
    expect(unmapped.locator("td.num")).to_have_text("2")
    expect(table.locator("#score-non_canonical")).to_contain_text("note")
    expect(table.locator("#score-no_deciding_reply")).to_contain_text("passes")
    expect(page.locator("#score-now")).to_have_count(0)  # support staff queue nothing

    unmapped.get_by_role("link", name="see the tasks").click()
    expect(page).to_have_url(re.compile(rf"/tasks/\?agent_id={AGENT}&conformance=unmapped$"))
    rows = page.locator("table.list tbody tr")
    expect(rows).to_have_count(2)
    body = page.locator("table.list tbody")
    for task_id in scored["unmapped"]:
        expect(body.locator(f'a[href*="/tasks/{task_id}/"]').first).to_be_visible()
    expect(body.locator(f'a[href*="/tasks/{scored["fine"][0]}/"]')).to_have_count(0)
    # The filter is a chip like any other: one click removes it, the agent filter stays.
    page.locator("ul.chips a").filter(has_text="Conformance").click()
    expect(page).to_have_url(re.compile(rf"/tasks/\?agent_id={AGENT}$"))
    expect(rows).to_have_count(4)

    page.go_back()
    expect(rows).to_have_count(2)


def test_an_operator_queues_a_scoring_and_admins_see_the_ranking(
    page: Page, live_server, django_user_model, scored
):
    log_in_as(page, live_server, django_user_model, "ada-score", roles.ADMIN)
    page.goto(f"{live_server.url}/agents/{AGENT}/")
    page.locator("#score-now").click()
    expect(page.locator("ul.flash")).to_contain_text("Scoring queued")
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Scorecards").click()
    expect(page).to_have_url(f"{live_server.url}/scorecards/")
    first = page.locator("table.list tbody tr").first
    expect(first).to_contain_text("States no table knows (unmapped)")
    first.get_by_role("link", name="see the tasks").click()
    expect(page).to_have_url(re.compile(r"/tasks/\?agent_id=agt_.*&conformance=unmapped$"))
    expect(page.locator("table.list tbody tr").first).to_be_visible()
