"""Issue #14 in Chromium: ids on one line with a middle ellipsis and the full id on
hover, a working copy button, the status in words for support, the rule for admins."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group
from playwright.sync_api import Page, expect

from beeos_console.auditlog.services import Actor
from beeos_console.core import roles
from beeos_console.core.tables import middle
from tasks.services.write import ingest_openapi_task

from .conftest import login
from .test_console_flows import PASSWORD, openapi_task

LONG_ID = "tsk_" + "Q" * 40 + "_tail_Z9"


def log_in_as(page: Page, live_server, django_user_model, name: str, role: str) -> None:
    user = django_user_model.objects.create_user(username=name, password=PASSWORD)
    user.groups.add(Group.objects.get_or_create(name=role)[0])
    login(page, live_server, name, PASSWORD)


@pytest.fixture
def seeded() -> None:
    ingest_openapi_task(openapi_task(LONG_ID, "rejected", 30), actor=Actor.system())


def test_a_long_id_stays_on_one_line_with_its_full_id_on_hover_and_a_copy_button(
    page: Page, live_server, django_user_model, seeded
):
    log_in_as(page, live_server, django_user_model, "sue-browser", roles.SUPPORT)
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    page.goto(f"{live_server.url}/tasks/")
    cell = page.locator("td:first-child").filter(has_text="tail_Z9")
    code = cell.locator("a code.id")
    expect(code).to_have_text(middle(LONG_ID, 30))
    expect(cell.locator("a")).to_have_attribute("title", LONG_ID)
    # One line: the id is not broken mid-token.
    line = code.evaluate("el => parseFloat(getComputedStyle(el).lineHeight) || 20")
    assert code.bounding_box()["height"] <= line * 1.5
    cell.get_by_role("button", name="Copy").click()
    assert page.evaluate("navigator.clipboard.readText()") == LONG_ID


def test_support_reads_words_and_an_admin_can_open_the_rule(
    page: Page, live_server, django_user_model, seeded
):
    log_in_as(page, live_server, django_user_model, "sue-browser", roles.SUPPORT)
    page.goto(f"{live_server.url}/tasks/{LONG_ID}/?protocol=openapi")
    words = page.locator(".status-words")
    expect(words).to_contain_text("Rejected: the agent refused the task before starting it")
    expect(words).to_contain_text("Safe to retry: nothing happened, sending it again is safe")
    expect(page.locator(".rule-details")).to_have_count(0)
    assert "`" not in page.locator("main").inner_text()

    page.context.clear_cookies()
    log_in_as(page, live_server, django_user_model, "ada-rules", roles.ADMIN)
    page.goto(f"{live_server.url}/tasks/{LONG_ID}/?protocol=openapi")
    rule = page.locator(".rule-details dd.rule")
    expect(rule).not_to_be_visible()
    page.locator(".rule-details summary").click()
    expect(rule).to_contain_text("OpenAPI `rejected` → failed · rejected")
