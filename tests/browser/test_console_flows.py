"""The flows operators depend on, driven in Chromium against the live server.

Data is seeded through the ingest services (never raw ORM writes), users log
in through the real form, and each assertion is something a person would see.
"""

from __future__ import annotations

import datetime as dt
import re

import pytest
from django.contrib.auth.models import Group
from playwright.sync_api import Page, expect

from beeos_console.auditlog.services import Actor
from beeos_console.core import roles
from operations.services.write import ingest_runtime_operation
from tasks.services.write import ingest_message, ingest_openapi_task, ingest_product_task

from .conftest import login

PASSWORD = "browser-Pw-7731"
# Seeded rows are a few hours old (the 120 pagination tasks span two hours).
BASE_TIME = dt.datetime.now(dt.UTC).replace(second=0, microsecond=0) - dt.timedelta(hours=6)
XSS_BODY = '<script>window.__xss=1</script><img src=x onerror="window.__xss=2">'


# --- users and seed data --------------------------------------------------------


@pytest.fixture
def support_login(page: Page, live_server, django_user_model):
    """Create a support user with a known password and log in as them."""
    user = django_user_model.objects.create_user(username="sam-browser", password=PASSWORD)
    # transactional_db flushes the data migration's groups between tests.
    user.groups.add(Group.objects.get_or_create(name=roles.SUPPORT)[0])
    login(page, live_server, "sam-browser", PASSWORD)
    return user


def iso(minutes: int) -> str:
    return (BASE_TIME + dt.timedelta(minutes=minutes)).isoformat().replace("+00:00", "Z")


def openapi_task(task_id: str, status: str, minutes: int = 0, **extra) -> dict:
    data = {
        "task_id": task_id,
        "agent_id": "agt_Fz3Kq8LmW2Xv",
        "caller_id": "usr_b7Tn2QwErY",
        "status": status,
        "created_at": iso(minutes),
        "started_at": iso(minutes),
        "metadata": {"agent_name": "support-triage"},
    }
    if status in ("completed", "failed", "canceled", "timeout", "rejected"):
        data["completed_at"] = iso(minutes + 1)
    data.update(extra)
    return data


def seed_tasks() -> None:
    system = Actor.system()
    for minutes, (task_id, status) in enumerate(
        [
            ("tsk_timeout_Q81", "timeout"),
            ("tsk_failed_Z20", "failed"),
            ("tsk_rejected_K55", "rejected"),
            ("tsk_completed_A01", "completed"),
            ("tsk_running_B02", "running"),
            ("tsk_queued_C03", "queued"),
            ("tsk_canceled_D04", "canceled"),
        ]
    ):
        ingest_openapi_task(openapi_task(task_id, status, minutes), actor=system)
    # Another protocol, so that a protocol filter has something to hide.
    ingest_product_task(
        {"task_id": "job_done_7", "status": "completed", "updated_at": iso(20)}, actor=system
    )


def operation(op_id: str, status: str, effect_state: str, sequence: int, **extra) -> dict:
    data = {
        "id": op_id,
        "instanceId": "ins_Qm4Xz8Lp2W",
        "target": {"scope": "agent", "platformAgentId": "agt_Fz3Kq8LmW2Xv"},
        "method": "session/set_model",
        "capability": "conversation.control",
        "transport": "service",
        "sequence": str(sequence),
        "createdAt": iso(sequence),
        "updatedAt": iso(sequence + 1),
        "status": status,
        "effectState": effect_state,
        "terminal": status not in ("queued", "running", "runtime_committed", "projection_pending"),
    }
    data.update(extra)
    return data


def seed_operations() -> None:
    system = Actor.system()
    for op in [
        operation("op_unknown_1", "outcome_unknown", "outcome_unknown", 1),
        operation("op_unknown_2", "outcome_unknown", "outcome_unknown", 2),
        operation("op_running_3", "running", "running", 3),
        operation("op_succeeded_4", "succeeded", "committed", 4),
        operation(
            "op_failed_5",
            "failed",
            "failed",
            5,
            error={"code": "instance_unreachable", "message": "no route", "retryMode": "resubmit"},
        ),
    ]:
        ingest_runtime_operation(op, actor=system)


# --- page helpers -----------------------------------------------------------------


def rows(page: Page):
    return page.locator("#results table.list tbody tr")


def filter_group(page: Page, summary: str):
    """One checkbox group (<details>) of the filter panel, by its summary text."""
    return page.locator("form.filters details.filter-group").filter(
        has=page.locator("summary", has_text=re.compile(rf"^\s*{re.escape(summary)}\b"))
    )


def tick(page: Page, group: str, value: str) -> None:
    """Tick one checkbox of a filter group (opening it first) and wait for htmx."""
    details = filter_group(page, group)
    if details.get_attribute("open") is None:
        details.locator("summary").click()
    details.get_by_label(value, exact=True).check()
    wait_for_results(page)


def wait_for_results(page: Page) -> None:
    expect(page.locator("#results")).not_to_have_class(re.compile(r"\bhtmx-request\b"))


def row_task_ids(page: Page) -> list[str]:
    return rows(page).locator("td:first-child a code").all_inner_texts()


def open_tasks_filtered_by_failed(page: Page) -> None:
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Tasks").click()
    expect(page).to_have_url(re.compile(r"/tasks/$"))
    expect(rows(page)).to_have_count(8)
    tick(page, "Product status", "failed")
    expect(page).to_have_url(re.compile(r"[?&]status=failed(&|$)"))
    expect(rows(page)).to_have_count(3)


# --- the flows ----------------------------------------------------------------------


def test_filter_failed_tasks_and_open_an_uncertain_timeout(
    page: Page, live_server, django_user_model
):
    """From the login form on: log in, filter, open the task."""
    user = django_user_model.objects.create_user(username="sam-browser", password=PASSWORD)
    user.groups.add(Group.objects.get_or_create(name=roles.SUPPORT)[0])
    login(page, live_server, "sam-browser", PASSWORD, through_the_form=True)
    seed_tasks()
    open_tasks_filtered_by_failed(page)

    badges = rows(page).locator("td:nth-child(2) .badge")
    expect(badges).to_have_count(3)
    assert badges.all_inner_texts() == ["failed"] * 3
    timeout_row = rows(page).filter(has=page.locator("code.raw", has_text=re.compile("^timeout$")))
    expect(timeout_row).to_have_count(1)
    expect(timeout_row.locator("td:nth-child(4)")).to_have_text("OpenAPI")

    timeout_row.locator("td:first-child a").click()
    expect(page).to_have_url(re.compile(r"/tasks/tsk_timeout_Q81/\?protocol=openapi$"))
    expect(page.locator("h1.object-title")).to_contain_text("tsk_timeout_Q81")

    raw = page.locator("dt:has-text('Raw wire state') + dd code.raw")
    expect(raw).to_have_text("timeout")
    font = raw.evaluate("el => getComputedStyle(el).fontFamily")
    assert "monospace" in font, font
    # Issue #14: support reads the status in words; the rule syntax is for admins.
    expect(page.locator(".status-words")).to_contain_text("Timed out: the command may have")
    expect(page.locator(".status-words")).to_contain_text("Manual review: check with")
    expect(page.locator("dd.rule")).to_have_count(0)
    expect(page.locator(".status-line")).to_contain_text("retry policy: manual_review")
    banner = page.locator(".banner-warning[role=alert]")
    expect(banner).to_contain_text("Outcome uncertain.")
    expect(banner).to_contain_text("may already have reached the agent or device")


def test_back_button_returns_to_the_filtered_list(page: Page, support_login):
    seed_tasks()
    open_tasks_filtered_by_failed(page)
    filtered_url = page.url
    rows(page).first.locator("td:first-child a").click()
    expect(page.locator(".status-words")).to_be_visible()

    page.go_back()
    expect(page).to_have_url(filtered_url)
    # A full page (not the htmx fragment the browser may have cached for this URL).
    expect(page.locator("form.filters")).to_be_visible()
    expect(page.locator("header.topbar")).to_be_visible()
    expect(filter_group(page, "Product status").get_by_label("failed", exact=True)).to_be_checked()
    expect(rows(page)).to_have_count(3)
    assert rows(page).locator("td:nth-child(2) .badge").all_inner_texts() == ["failed"] * 3


def test_operations_outcome_unknown_filter_and_banner(page: Page, support_login):
    seed_operations()
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Operations").click()
    expect(page).to_have_url(re.compile(r"/operations/$"))
    expect(rows(page)).to_have_count(5)

    tick(page, "Raw status", "outcome_unknown")
    expect(page).to_have_url(re.compile(r"[?&]raw_status=outcome_unknown(&|$)"))
    expect(rows(page)).to_have_count(2)
    assert rows(page).locator("td:nth-child(3) code.raw").all_inner_texts() == [
        "outcome_unknown",
        "outcome_unknown",
    ]
    expect(rows(page).filter(has_text="op_running_3")).to_have_count(0)

    rows(page).filter(has_text="op_unknown_1").locator("td:first-child a").click()
    expect(page).to_have_url(re.compile(r"/operations/op_unknown_1/$"))
    banner = page.locator(".banner-warning[role=alert]")
    expect(banner).to_contain_text("Outcome unknown.")
    expect(banner).to_contain_text("Automatic replay is unsafe")
    expect(page.locator("dt:text-is('effectState') + dd code.raw")).to_have_text("outcome_unknown")
    expect(page.locator("dt:text-is('Raw status') + dd code.raw")).to_have_text("outcome_unknown")


def test_message_body_with_markup_is_shown_as_text_not_run(page: Page, support_login):
    system = Actor.system()
    ingest_openapi_task(openapi_task("tsk_xss_M1", "completed"), actor=system)
    ingest_message(
        {
            "id": "msg_xss_1",
            "conversation_id": "tsk_xss_M1",
            "type": "agent_reply",
            "sender": "agt_Fz3Kq8LmW2Xv",
            "body": XSS_BODY,
            "state": "completed",
            "stop_reason": "end_turn",
            "created_at": iso(1),
        },
        actor=system,
    )
    page.goto("/tasks/tsk_xss_M1/?protocol=openapi")
    body = page.locator("#timeline pre.body")
    expect(body).to_have_text(XSS_BODY)
    assert "<script>" in page.locator("body").inner_text()
    assert page.evaluate("window.__xss") is None

    # The messages list shows the same body (truncated) and runs nothing either.
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Messages").click()
    expect(rows(page).locator("td.body-cell")).to_contain_text("<script>window.__xss=1</script>")
    assert page.evaluate("window.__xss") is None


def test_removing_a_filter_chip_drops_only_that_filter(page: Page, support_login):
    seed_tasks()
    page.goto("/tasks/?status=failed&status=completed&protocol=openapi")
    chips = page.locator("#results ul.chips li a")
    expect(chips).to_have_count(3)
    expect(rows(page)).to_have_count(4)  # 3 failed + 1 completed, OpenAPI only

    chips.filter(has=page.locator("code", has_text=re.compile("^failed$"))).click()

    expect(page).not_to_have_url(re.compile(r"status=failed"))
    expect(page).to_have_url(re.compile(r"[?&]status=completed(&|$)"))
    expect(page).to_have_url(re.compile(r"[?&]protocol=openapi(&|$)"))
    expect(chips).to_have_count(2)
    expect(chips.filter(has_text="failed")).to_have_count(0)
    group = filter_group(page, "Product status")
    expect(group.get_by_label("failed", exact=True)).not_to_be_checked()
    expect(group.get_by_label("completed", exact=True)).to_be_checked()
    expect(rows(page)).to_have_count(1)
    assert row_task_ids(page) == ["tsk_completed_A01"]


def test_keyset_pages_never_repeat_a_row(page: Page, support_login):
    system = Actor.system()
    for n in range(120):
        ingest_openapi_task(openapi_task(f"tsk_page_{n:03d}", "completed", n), actor=system)
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Tasks").click()
    expect(page.locator("#results .matching")).to_have_text("120 matching")
    pager = page.locator("#results nav.pager")
    first_id = rows(page).first.locator("td:first-child a code")

    page1 = row_task_ids(page)
    assert page1[0] == "tsk_page_119" and len(page1) == 50

    pager.get_by_role("link", name="Older →").click()
    expect(first_id).not_to_have_text(page1[0])
    expect(page).to_have_url(re.compile(r"[?&]after="))
    page2 = row_task_ids(page)

    pager.get_by_role("link", name="Older →").click()
    expect(first_id).not_to_have_text(page2[0])
    page3 = row_task_ids(page)
    expect(pager.get_by_role("link", name="Older →")).to_have_count(0)

    pager.get_by_role("link", name="← Newer").click()
    expect(first_id).not_to_have_text(page3[0])
    expect(page).to_have_url(re.compile(r"[?&]before="))
    page2_again = row_task_ids(page)

    assert (len(page1), len(page2), len(page3)) == (50, 50, 20)
    assert page1 != page2 != page3
    seen = page1 + page2 + page3
    assert len(set(seen)) == len(seen) == 120, "a row repeats across pages"
    assert seen == [f"tsk_page_{n:03d}" for n in range(119, -1, -1)]
    assert page2_again == page2


def test_tasks_list_has_no_horizontal_scrollbar_at_1280px(page: Page, support_login):
    seed_tasks()
    system = Actor.system()
    # Long upstream values: ids, agents and an unmapped raw state of 64 characters.
    for n in range(3):
        ingest_openapi_task(
            openapi_task(
                f"tsk_{'x' * 200}_{n}",
                "paused_by_operations_" + "z" * 43,
                30 + n,
                agent_id="agt_" + "L" * 120,
            ),
            actor=system,
        )
    page.goto("/tasks/?status=failed&status=unmapped&status=completed&protocol=openapi")
    expect(rows(page)).to_have_count(7)
    assert page.viewport_size == {"width": 1280, "height": 900}
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 1280, f"the Tasks list scrolls sideways: scrollWidth {width}px"
