"""With the Content-Security-Policy on, the main pages load and work in Chromium
without a single violation: no inline script, handler or injected style is left."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group
from playwright.sync_api import ConsoleMessage, Page, expect

from beeos_console.core import roles

from ..factories import make_message, make_operation, make_task
from .conftest import login

PASSWORD = "browser-Pw-5519"


@pytest.fixture
def admin_login(page: Page, live_server, django_user_model):
    user = django_user_model.objects.create_user(
        username="ada-browser", password=PASSWORD, is_staff=True, is_superuser=True
    )
    user.groups.add(Group.objects.get_or_create(name=roles.ADMIN)[0])
    return user


def test_main_pages_report_no_csp_violation(page: Page, live_server, admin_login):
    task = make_task("running")
    make_message(task, body="hello")
    operation = make_operation("outcome_unknown")
    problems: list[str] = []

    def on_console(message: ConsoleMessage) -> None:
        text = message.text
        if "Content Security Policy" in text or "Content-Security-Policy" in text:
            problems.append(f"{page.url}: {text}")
        elif message.type == "error":
            problems.append(f"{page.url}: console error: {text}")

    page.on("console", on_console)
    page.on("pageerror", lambda error: problems.append(f"{page.url}: {error}"))

    page.goto(f"{live_server.url}/login/")
    header = page.request.get(f"{live_server.url}/login/").headers["content-security-policy"]
    assert "script-src 'self'" in header
    login(page, live_server, "ada-browser", PASSWORD, through_the_form=True)

    urls = [
        "/",
        "/tasks/",
        f"/tasks/{task.task_id}/?protocol={task.protocol}",
        "/operations/",
        f"/operations/{operation.operation_id}/",
        "/messages/",
        "/audit/log/",
        "/audit/projections/",
        "/audit/lockouts/",
        "/api/docs/",
    ]
    for url in urls:
        response = page.goto(f"{live_server.url}{url}")
        assert response is not None and response.status == 200, url
        assert "script-src 'self'" in response.headers["content-security-policy"], url
        page.wait_for_load_state("networkidle")

    # The docs page's Swagger UI started from its script file.
    expect(page.locator(".swagger-ui")).to_be_visible()

    # htmx and console.js run under the policy: the inline cancel row opens under a
    # list row and "Keep it running" (formerly an inline onclick) removes it again.
    page.goto(f"{live_server.url}/tasks/")
    page.get_by_title("Cancel this task").first.click()
    expect(page.locator("tr.cancel-row")).to_have_count(1)
    page.get_by_role("button", name="Keep it running").click()
    expect(page.locator("tr.cancel-row")).to_have_count(0)

    assert problems == [], "\n".join(problems)
