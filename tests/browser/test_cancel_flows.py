"""Cancelling in the browser: an operator stops stuck work; support cannot."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import Group
from playwright.sync_api import Page, expect

from beeos_console.auditlog.models import AuditEntry
from beeos_console.auditlog.services import Actor
from beeos_console.core import roles
from tasks.models import Task
from tasks.services.write import ingest_openapi_task

from .conftest import login
from .test_console_flows import PASSWORD, openapi_task


def make_user(django_user_model, username: str, role: str):
    user = django_user_model.objects.create_user(username=username, password=PASSWORD)
    user.groups.add(Group.objects.get_or_create(name=role)[0])
    return user


def seed_running() -> None:
    ingest_openapi_task(openapi_task("tsk_stuck_R77", "running"), actor=Actor.system())


def test_operator_cancels_a_processing_task_with_a_reason(
    page: Page, live_server, django_user_model
):
    make_user(django_user_model, "olga-browser", roles.OPERATOR)
    seed_running()
    login(page, live_server, "olga-browser", PASSWORD)
    page.goto(f"{live_server.url}/tasks/tsk_stuck_R77/?protocol=openapi")
    status_card = page.locator("#status-card")
    expect(status_card.locator(".badge")).to_have_text("processing")
    page.get_by_text("Cancel this task…").click()
    page.get_by_label(re.compile("Reason")).fill("Customer asked to stop; stuck for 3 h")
    page.get_by_role("button", name="Cancel task").click()
    expect(page.locator("#cancel-area")).to_contain_text("Cancelled.")
    # The status card is swapped in place: no reload needed.
    expect(status_card.locator(".badge")).to_have_text("cancelled")
    expect(status_card).to_contain_text("canceled")
    task = Task.objects.get(task_id="tsk_stuck_R77")
    assert (task.raw_state, task.status) == ("canceled", "cancelled")
    entry = AuditEntry.objects.get(action="task.cancel")
    assert (entry.actor, entry.reason) == ("olga-browser", "Customer asked to stop; stuck for 3 h")


def test_operator_cancels_from_a_list_row(page: Page, live_server, django_user_model):
    make_user(django_user_model, "omar-browser", roles.OPERATOR)
    seed_running()
    login(page, live_server, "omar-browser", PASSWORD)
    page.goto(f"{live_server.url}/tasks/?status=processing")
    row = page.locator("tr", has_text="tsk_stuck_R77")
    row.get_by_role("link", name="Cancel…").click()
    page.locator("tr.cancel-row textarea").fill("clearing the queue")
    page.locator("tr.cancel-row").get_by_role("button", name="Cancel task").click()
    expect(page.locator("tr.cancel-row")).to_contain_text("Cancelled.")
    expect(page.locator("tr", has_text="tsk_stuck_R77").first.locator(".badge")).to_have_text(
        "cancelled"
    )


@pytest.mark.parametrize("via", ["button", "endpoint"])
def test_support_sees_no_cancel_button_and_gets_403(
    page: Page, live_server, django_user_model, via
):
    make_user(django_user_model, "sue-browser", roles.SUPPORT)
    seed_running()
    login(page, live_server, "sue-browser", PASSWORD)
    page.goto(f"{live_server.url}/tasks/tsk_stuck_R77/?protocol=openapi")
    expect(page.get_by_text("Read-only: cancelling needs the operator role")).to_be_visible()
    expect(page.get_by_text("Cancel this task…")).to_have_count(0)
    if via == "endpoint":
        token = page.evaluate("document.querySelector('body').getAttribute('hx-headers')")
        csrf = re.search(r'"X-CSRFToken": "([^"]+)"', token).group(1)
        response = page.request.post(
            f"{live_server.url}/tasks/tsk_stuck_R77/cancel/?protocol=openapi",
            form={"reason": "sneaky", "protocol": "openapi"},
            headers={"X-CSRFToken": csrf, "Referer": live_server.url + "/"},
        )
        assert response.status == 403
        assert "operator role" in response.text()
    assert Task.objects.get(task_id="tsk_stuck_R77").raw_state == "running"
