"""The header search box (#14) in Chromium: "/" focuses it, a fragment finds the task."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import Group
from playwright.sync_api import Page, expect

from beeos_console.auditlog.services import Actor
from beeos_console.core import roles
from tasks.services.write import ingest_openapi_task

from .conftest import login

PASSWORD = "browser-Pw-5512"
FEEDER = Actor.feeder("browser-search")


@pytest.fixture
def support_login(page: Page, live_server, django_user_model):
    user = django_user_model.objects.create_user(username="sue-search", password=PASSWORD)
    user.groups.add(Group.objects.get_or_create(name=roles.SUPPORT)[0])
    login(page, live_server, "sue-search", PASSWORD)
    return user


def seed(task_id: str, status: str = "failed") -> None:
    ingest_openapi_task(
        {
            "task_id": task_id,
            "agent_id": "agt_search",
            "status": status,
            "created_at": "2026-11-30T08:00:00Z",
        },
        actor=FEEDER,
    )


def test_slash_focuses_the_box_and_a_fragment_lands_on_the_task(page: Page, support_login):
    seed("tsk_Hq7WbrowserNEEDLE42")
    seed("tsk_other_0001", "running")
    page.goto("/tasks/")
    page.locator("h1").click()  # focus on the page, not in a field
    page.keyboard.press("/")
    box = page.locator("#console-search")
    expect(box).to_be_focused()
    page.keyboard.type("needle4")
    # The htmx dropdown lists the hit while typing…
    expect(page.locator("#search-dropdown")).to_contain_text("tsk_Hq7WbrowserNEEDLE42")
    # …and Enter opens it directly: one hit.
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(r"/tasks/tsk_Hq7WbrowserNEEDLE42/"))
    expect(page.locator("h1")).to_contain_text("tsk_Hq7WbrowserNEEDLE42")


def test_slash_in_a_field_types_a_slash(page: Page, support_login):
    page.goto("/search/")
    field = page.locator("#search-page-q")
    field.click()
    page.keyboard.type("a/b")
    expect(field).to_have_value("a/b")
    expect(page.locator("#console-search")).not_to_be_focused()
