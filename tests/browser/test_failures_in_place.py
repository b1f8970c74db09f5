"""A request that fails shows its message where the operator clicked."""

from __future__ import annotations

import re

from django.contrib.auth.models import Group
from playwright.sync_api import Page, Route, expect

from beeos_console.auditlog.services import Actor
from beeos_console.core import roles
from tasks.models import Task
from tasks.services.write import ingest_openapi_task

from .conftest import login
from .test_console_flows import PASSWORD, openapi_task


def operator(django_user_model) -> None:
    user = django_user_model.objects.create_user(username="ola-fail", password=PASSWORD)
    user.groups.add(Group.objects.get_or_create(name=roles.OPERATOR)[0])


def open_cancel_form(page: Page, live_server) -> None:
    ingest_openapi_task(openapi_task("tsk_fail_F1", "running"), actor=Actor.system())
    login(page, live_server, "ola-fail", PASSWORD)
    page.goto(f"{live_server.url}/tasks/tsk_fail_F1/?protocol=openapi")
    page.get_by_text("Cancel this task…").click()
    page.get_by_label(re.compile("Reason")).fill("stuck")


def test_a_server_error_is_said_next_to_the_cancel_form(page: Page, live_server, django_user_model):
    operator(django_user_model)
    open_cancel_form(page, live_server)

    def fail(route: Route) -> None:
        route.fulfill(status=502, body="Bad Gateway", content_type="text/plain")

    page.route(re.compile(r".*/tasks/tsk_fail_F1/cancel/.*"), fail)
    page.get_by_role("button", name="Cancel task").click()
    alert = page.locator("#cancel-area .request-failed")
    expect(alert).to_contain_text("could not do that (HTTP 502)")
    assert Task.objects.get(task_id="tsk_fail_F1").status == "processing"


def test_a_lost_connection_is_said_next_to_the_cancel_form(
    page: Page, live_server, django_user_model
):
    operator(django_user_model)
    open_cancel_form(page, live_server)
    page.route(re.compile(r".*/tasks/tsk_fail_F1/cancel/.*"), lambda route: route.abort())
    page.get_by_role("button", name="Cancel task").click()
    expect(page.locator("#cancel-area .request-failed")).to_contain_text("did not answer")


def test_a_refused_input_shows_the_consoles_own_message(page: Page, live_server, django_user_model):
    operator(django_user_model)
    open_cancel_form(page, live_server)
    # A reason of blanks passes the browser's `required` but not the console.
    page.get_by_label(re.compile("Reason")).fill("   ")
    page.get_by_role("button", name="Cancel task").click()
    expect(page.locator("body")).to_contain_text("A reason is required")
