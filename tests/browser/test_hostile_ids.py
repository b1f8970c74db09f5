"""Ids can't redirect actions, in Chromium: the links and cancel forms of hostile ids
(``/``, ``%``, ``#``, ``?``, blanks, letters beyond ASCII, a ``/cancel`` tail) go
to *that* task — checked on the requests the browser sent and on the audit entry.
"""

from __future__ import annotations

import re
from urllib.parse import quote

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

HOSTILE_IDS = ["a/b", "a%2Fb", "tsk#frag", "tsk?x=1", "名前/x", "a b", "x/cancel"]
# What a hostile id could reach instead, if its characters acted in a URL.
DECOYS = ["a", "x", "tsk", "名前", "b"]


@pytest.fixture
def operator(page: Page, live_server, django_user_model) -> Page:
    user = django_user_model.objects.create_user(username="ivy-operator", password=PASSWORD)
    user.groups.add(Group.objects.get_or_create(name=roles.OPERATOR)[0])
    login(page, live_server, "ivy-operator", PASSWORD)
    return page


def seed(task_id: str) -> Task:
    for decoy in DECOYS:
        if decoy != task_id:
            ingest_openapi_task(openapi_task(decoy, "running", 30), actor=Actor.system())
    return ingest_openapi_task(openapi_task(task_id, "running", 10), actor=Actor.system()).obj


def only_cancelled(task_id: str) -> None:
    assert [e.object_id for e in AuditEntry.objects.filter(action="task.cancel")] == [task_id]
    assert set(Task.objects.filter(raw_state="canceled").values_list("task_id", flat=True)) == {
        task_id
    }


def posts(page: Page) -> list[str]:
    sent: list[str] = []
    page.on("request", lambda r: sent.append(r.url) if r.method == "POST" else None)
    return sent


@pytest.mark.parametrize("task_id", HOSTILE_IDS)
def test_list_link_then_detail_cancel_form(operator: Page, live_server, task_id):
    task = seed(task_id)
    segment = quote(task_id, safe="")
    sent = posts(operator)
    operator.goto(f"{live_server.url}/tasks/")
    operator.locator(f"#task-row-{task.pk} td a code").first.click()
    operator.wait_for_url(re.compile(re.escape(f"/tasks/{segment}/?protocol=openapi")))
    expect(operator.locator("h1.object-title code")).to_have_text(task_id)
    operator.get_by_text("Cancel this task…").click()
    operator.locator("#cancel-reason").fill("hostile id, detail page")
    operator.get_by_role("button", name="Cancel task").click()
    expect(operator.locator("#cancel-area")).to_contain_text("Cancelled.")
    assert sent == [f"{live_server.url}/tasks/{segment}/cancel/?protocol=openapi"]
    only_cancelled(task_id)


@pytest.mark.parametrize("task_id", HOSTILE_IDS)
def test_list_row_inline_cancel(operator: Page, live_server, task_id):
    task = seed(task_id)
    segment = quote(task_id, safe="")
    sent = posts(operator)
    operator.goto(f"{live_server.url}/tasks/")
    operator.locator(f"#task-row-{task.pk}").get_by_role("link", name="Cancel…").click()
    operator.locator("tr.cancel-row textarea").fill("hostile id, inline row")
    operator.locator("tr.cancel-row").get_by_role("button", name="Cancel task").click()
    expect(operator.locator("tr.cancel-row")).to_contain_text("Cancelled.")
    expect(operator.locator(f"#task-row-{task.pk} .badge")).to_have_text("cancelled")
    assert sent == [f"{live_server.url}/tasks/{segment}/cancel/?protocol=openapi&row=1"]
    only_cancelled(task_id)
