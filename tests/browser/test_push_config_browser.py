"""An A2A task's push-notification settings in Chromium: fetched into the task page with
htmx, and as a page of its own with JavaScript switched off. The token is never shown."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group
from playwright.sync_api import Page, expect

from beeos_console.auditlog.services import Actor
from beeos_console.core import roles
from beeos_console.core.links import object_url
from tasks.services.write import ingest_a2a_task
from tests.standin import BeeOSStandIn

from .conftest import VIEWPORT, login
from .test_console_flows import PASSWORD

KEY = "bsk_browser_push"
AGENT = "agt_push_browser"
TOKEN = "tok_SECRET_browser_55"


@pytest.fixture
def task(settings):
    with BeeOSStandIn(api_key=KEY) as server:
        settings.BEEOS_CLOUD_URL = server.cloud_url
        settings.BEEOS_CLOUD_API_KEY = KEY
        view = server.add_a2a_task(task_id="a2a_push/browser", agent_id=AGENT)
        server.set_push_configs(
            view["id"],
            [{"id": "pnc_browser", "url": "https://hooks.example.com/b", "token": TOKEN}],
        )
        yield ingest_a2a_task(view, actor=Actor.system()).obj


@pytest.fixture
def support(django_user_model) -> str:
    user = django_user_model.objects.create_user(username="sue-push", password=PASSWORD)
    user.groups.add(Group.objects.get_or_create(name=roles.SUPPORT)[0])
    return user.username


def test_the_settings_load_into_the_task_page(page: Page, live_server, task, support):
    login(page, live_server, support, PASSWORD)
    page.goto(live_server.url + object_url("tasks:detail", task.task_id, protocol="a2a"))
    page.get_by_role("link", name="Show push-notification settings").click()
    region = page.locator("#push-config-region #push-configs")
    expect(region).to_contain_text("pnc_browser")
    expect(region).to_contain_text("https://hooks.example.com/b")
    assert page.url.endswith("/?protocol=a2a")  # stayed on the task page
    assert TOKEN not in page.content()


def test_without_javascript_the_link_opens_a_page(
    browser, transactional_db, live_server, task, support
):
    context = browser.new_context(
        viewport=VIEWPORT, base_url=live_server.url, java_script_enabled=False
    )
    page = context.new_page()
    try:
        login(page, live_server, support, PASSWORD)
        page.goto(live_server.url + object_url("tasks:detail", task.task_id, protocol="a2a"))
        page.get_by_role("link", name="Show push-notification settings").click()
        expect(page.get_by_role("heading", level=1)).to_have_text("Push-notification settings")
        expect(page.locator("#push-configs")).to_contain_text("pnc_browser")
        assert TOKEN not in page.content()
    finally:
        context.close()
