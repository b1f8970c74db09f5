"""Issue #14: the list page never lies about its filters, and auto-refresh waits for the user."""

from __future__ import annotations

import re
import time

import pytest
from playwright.sync_api import Page, expect

from beeos_console.auditlog.services import Actor
from beeos_console.core import listing, roles
from tasks.services.write import ingest_openapi_task

from .conftest import login
from .test_cancel_flows import make_user
from .test_console_flows import PASSWORD, openapi_task

POLL_WAIT_MS = 2600  # more than two polls at the tests' 1 s refresh


def seed() -> None:
    for task_id, status in (
        ("tsk_run_A1", "running"),
        ("tsk_run_B2", "running"),
        ("tsk_fail_C3", "failed"),
        ("tsk_done_D4", "completed"),
    ):
        ingest_openapi_task(openapi_task(task_id, status), actor=Actor.system())


@pytest.fixture
def operator(page: Page, live_server, django_user_model):
    make_user(django_user_model, "opal-browser", roles.OPERATOR)
    seed()
    login(page, live_server, "opal-browser", PASSWORD)


def box(page: Page, value: str):
    return page.locator(f'form.filters input[name="status"][value="{value}"]')


def chips(page: Page):
    return page.locator("#results ul.chips")


def test_back_and_forward_keep_form_chips_and_results_in_sync(page: Page, live_server, operator):
    page.goto(f"{live_server.url}/tasks/")
    box(page, "failed").check()
    page.wait_for_url(re.compile(r"status=failed"))
    expect(page.locator("#results")).not_to_contain_text("tsk_run_A1")
    query = page.locator("form.filters input[name=q]")
    query.fill("tsk_fail")
    query.press("Enter")
    page.wait_for_url(re.compile(r"q=tsk_fail"))
    expect(chips(page)).to_contain_text("tsk_fail")

    page.go_back()
    page.wait_for_url(lambda url: "status=failed" in url and "q=" not in url)
    expect(chips(page)).not_to_contain_text("tsk_fail")
    expect(page.locator("form.filters input[name=q]")).to_have_value("")
    expect(box(page, "failed")).to_be_checked()
    expect(chips(page)).to_contain_text("failed")
    expect(page.locator("#results")).to_contain_text("tsk_fail_C3")
    expect(page.locator("#results")).not_to_contain_text("tsk_run_A1")

    page.go_back()
    page.wait_for_url(re.compile(r"/tasks/$"))
    expect(box(page, "failed")).not_to_be_checked()
    expect(page.locator("#results ul.chips")).to_have_count(0)
    expect(page.locator("#results")).to_contain_text("tsk_run_A1")

    page.go_forward()
    page.wait_for_url(lambda url: "status=failed" in url and "q=" not in url)
    expect(box(page, "failed")).to_be_checked()
    expect(page.locator("#results")).not_to_contain_text("tsk_run_A1")
    # The next click keeps every other filter.
    box(page, "completed").check()
    page.wait_for_url(
        re.compile(r"status=failed.*status=completed|status=completed.*status=failed")
    )
    expect(page.locator("#results")).to_contain_text("tsk_done_D4")
    expect(page.locator("#results")).to_contain_text("tsk_fail_C3")
    expect(page.locator("#results")).not_to_contain_text("tsk_run_A1")


def test_enter_in_a_text_field_adds_one_history_entry(page: Page, live_server, operator):
    page.goto(f"{live_server.url}/tasks/")
    before = page.evaluate("history.length")
    query = page.locator("form.filters input[name=q]")
    query.fill("tsk_run")
    query.press("Enter")
    page.wait_for_url(re.compile(r"q=tsk_run"))
    expect(page.locator("#results")).not_to_contain_text("tsk_done_D4")
    page.wait_for_timeout(300)
    assert page.evaluate("history.length") == before + 1
    query.press("Enter")  # nothing changed: no new entry
    page.wait_for_timeout(500)
    assert page.evaluate("history.length") == before + 1
    page.go_back()
    page.wait_for_url(re.compile(r"/tasks/$"))


def test_links_derived_from_the_filter_follow_htmx_changes(page: Page, live_server, operator):
    page.goto(f"{live_server.url}/tasks/")
    box(page, "failed").check()
    page.wait_for_url(re.compile(r"status=failed"))
    expect(page.locator("#bulk-form input[name=query]")).to_have_value("status=failed")
    export = page.locator("#results a.export-link")
    if export.count():
        expect(export).to_have_attribute("href", re.compile(r"status=failed"))
    page.locator("form.filters input[name=q]").fill("tsk_fail")
    page.locator("form.filters input[name=q]").press("Enter")
    page.wait_for_url(re.compile(r"q=tsk_fail"))
    expect(page.locator("#bulk-form input[name=query]")).to_have_value(
        re.compile(r"^(?=.*status=failed)(?=.*q=tsk_fail)")
    )
    # "Cancel all matching" opens the preview of exactly this filter.
    page.get_by_role("button", name="Cancel all matching this filter…").click()
    page.wait_for_url(re.compile(r"/bulk/"))
    assert "tsk_fail" in page.url and "failed" in page.url


def test_a_poll_never_lands_over_the_form_the_user_opened(
    page: Page, live_server, operator, fast_refresh
):
    """The inline cancel form answers slowly (held longer than two 1 s polls): no poll
    may start meanwhile, or its rows would replace the row the form belongs under."""
    page.goto(f"{live_server.url}/tasks/?status=processing&refresh=true")
    note = page.locator("[data-auto-refresh]")
    expect(note).to_contain_text("Auto-refreshing")

    def slow_answer(route) -> None:
        time.sleep(POLL_WAIT_MS / 1000)
        route.continue_()

    page.route(re.compile(r"/cancel/"), slow_answer)
    page.locator("tr", has_text="tsk_run_A1").get_by_role("link", name="Cancel…").click()
    reason = page.locator("tr.cancel-row textarea")
    expect(reason).to_be_visible()
    expect(note).to_have_text("Auto-refresh paused while you work")
    page.wait_for_timeout(POLL_WAIT_MS)
    expect(reason).to_be_visible()
    expect(page.locator("tr.cancel-row")).to_have_count(1)


def open_inline_cancel(page: Page, task_id: str):
    """Open a row's inline cancel form; its reason field. At a 1 s refresh, a poll's
    answer can replace the rows just as the click lands and swallow it, as a person's
    click would be: then click again, as they would."""
    reason = page.locator("tr.cancel-row textarea")
    for _ in range(3):
        page.locator("tr", has_text=task_id).get_by_role("link", name="Cancel…").click()
        try:
            expect(reason).to_be_visible(timeout=3_000)
            return reason
        except AssertionError:
            continue
    raise AssertionError(f"three clicks on {task_id}'s Cancel… opened no form")


@pytest.fixture
def fast_refresh(monkeypatch):
    monkeypatch.setattr(listing, "REFRESH_SECONDS", 1)


def polls(page: Page) -> list[str]:
    seen: list[str] = []
    page.on(
        "request",
        lambda request: seen.append(request.url) if request.headers.get("x-console-poll") else None,
    )
    return seen


def polled_after(page: Page, seen: list[str], count: int) -> bool:
    """Whether a poll beyond the first ``count`` comes within POLL_WAIT_MS (as soon as it
    does: only the pauses need the whole wait)."""
    for _ in range(POLL_WAIT_MS // 100):
        if len(seen) > count:
            return True
        page.wait_for_timeout(100)
    return len(seen) > count


def test_auto_refresh_pauses_while_the_user_works(page: Page, live_server, operator, fast_refresh):
    seen = polls(page)
    page.goto(f"{live_server.url}/tasks/?status=processing&refresh=true")
    note = page.locator("[data-auto-refresh]")
    expect(note).to_contain_text("Auto-refreshing")
    assert polled_after(page, seen, 0), "auto-refresh polls while nobody works"

    # A selection.
    pick = page.locator('#results input[name="pick"]').first
    pick.check()
    expect(note).to_have_text("Auto-refresh paused while you work")
    count = len(seen)
    page.wait_for_timeout(POLL_WAIT_MS)
    assert len(seen) == count
    expect(pick).to_be_checked()
    pick.uncheck()
    page.locator("h1").click()
    expect(note).to_contain_text("Auto-refreshing")
    assert polled_after(page, seen, count)

    # An open inline cancel form with typed text.
    reason = open_inline_cancel(page, "tsk_run_A1")
    reason.fill("half-typed reason")
    note = page.locator("[data-auto-refresh]")
    expect(note).to_have_text("Auto-refresh paused while you work")
    count = len(seen)
    page.locator("h1").click()  # focus leaves the field: the open form still pauses
    page.wait_for_timeout(POLL_WAIT_MS)
    assert len(seen) == count
    expect(reason).to_have_value("half-typed reason")
    page.locator("tr.cancel-row").get_by_role("button", name="Keep it running").click()
    expect(note).to_contain_text("Auto-refreshing")

    # Typed text in a filter field, not applied yet.
    query = page.locator("form.filters input[name=q]")
    query.press_sequentially("tsk_ru")
    expect(note).to_have_text("Auto-refresh paused while you work")
    count = len(seen)
    page.wait_for_timeout(POLL_WAIT_MS)
    assert len(seen) == count
    expect(query).to_have_value("tsk_ru")
