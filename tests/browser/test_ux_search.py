"""The header search box in Chromium (#14, continued): agents by fragment, arrow keys through
the dropdown (ARIA combobox / listbox), Escape, "more results" pages with and without JS."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import Group
from playwright.sync_api import Page, expect

from beeos_console.auditlog.services import Actor
from beeos_console.core import roles
from tasks.services.write import ingest_openapi_task

from .conftest import login, save_screenshot
from .test_accessibility import AXE, SHOTS

PASSWORD = "browser-Pw-9043"
FEEDER = Actor.feeder("browser-ux-search")


@pytest.fixture
def support_login(page: Page, live_server, django_user_model):
    user = django_user_model.objects.create_user(username="sue-ux", password=PASSWORD)
    user.groups.add(Group.objects.get_or_create(name=roles.SUPPORT)[0])
    login(page, live_server, "sue-ux", PASSWORD)
    return user


def seed(task_id: str, agent_id: str = "agt_ux_search", minute: int = 0) -> None:
    ingest_openapi_task(
        {
            "task_id": task_id,
            "agent_id": agent_id,
            "status": "running",
            "created_at": f"2026-11-30T08:{minute:02d}:00Z",
        },
        actor=FEEDER,
    )


def type_in_the_box(page: Page, words: str) -> None:
    page.goto("/tasks/")
    page.locator("h1").click()
    page.keyboard.press("/")
    page.keyboard.type(words)
    expect(page.locator("#search-dropdown [role=option]").first).to_be_visible()


def test_an_agent_found_by_fragment_opens_its_page(page: Page, support_login):
    seed("tsk_ux_a1", agent_id="agt_harbour_pilot_9")
    seed("tsk_ux_a2", agent_id="agt_harbour_pilot_9", minute=1)
    seed("tsk_ux_b1", agent_id="agt_inland", minute=2)
    type_in_the_box(page, "ur_pilo")
    listbox = page.get_by_role("listbox")
    agents = listbox.get_by_role("group", name="Agents")
    expect(agents.get_by_role("option")).to_have_text(re.compile("agt_harbour_pilot_9"))
    page.keyboard.press("ArrowDown")
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(r"/agents/agt_harbour_pilot_9/$"))
    expect(page.locator("h1")).to_contain_text("agt_harbour_pilot_9")


def test_arrow_keys_move_through_the_results_enter_opens_escape_closes(page: Page, support_login):
    for i in range(3):
        seed(f"tsk_keys_{i}_Wq", minute=i)
    type_in_the_box(page, "keys_")
    box = page.locator("#console-search")
    options = page.locator("#search-dropdown [role=option]")
    expect(options).to_have_count(3)
    expect(box).to_have_attribute("role", "combobox")
    expect(box).to_have_attribute("aria-expanded", "true")
    expect(box).to_have_attribute("aria-controls", "search-listbox")

    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowDown")
    second = options.nth(1)
    expect(box).to_have_attribute("aria-activedescendant", second.get_attribute("id"))
    expect(second).to_have_attribute("aria-selected", "true")
    expect(options.nth(0)).to_have_attribute("aria-selected", "false")
    expect(box).to_be_focused()  # focus stays in the box
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowDown")  # stays on the last
    expect(options.nth(2)).to_have_attribute("aria-selected", "true")
    page.keyboard.press("ArrowUp")
    expect(second).to_have_attribute("aria-selected", "true")

    # Escape closes the dropdown and keeps the box focused, its text kept.
    page.keyboard.press("Escape")
    expect(options).to_have_count(0)
    expect(box).to_have_attribute("aria-expanded", "false")
    expect(box).not_to_have_attribute("aria-activedescendant", re.compile(".+"))
    expect(box).to_be_focused()
    expect(box).to_have_value("keys_")

    # Typing again reopens it; Enter opens the chosen result.
    page.keyboard.type("1")
    expect(options).to_have_count(1)
    page.keyboard.press("ArrowDown")
    href = options.nth(0).get_attribute("href")
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(re.escape(href) + "$"))
    expect(page.locator("h1")).to_contain_text("tsk_keys_1_Wq")


def test_enter_without_a_chosen_result_shows_all_results(page: Page, support_login):
    for i in range(2):
        seed(f"tsk_enter_{i}", minute=i)
    type_in_the_box(page, "tsk_enter_")
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(r"/search/\?q=tsk_enter_"))
    expect(page.locator("h1")).to_have_text("Search")


def test_the_open_dropdown_passes_axe(browser, live_server, page: Page, support_login):
    for i in range(3):
        seed(f"tsk_axe_{i}", minute=i)
    context = browser.new_context(base_url=live_server.url, bypass_csp=True)
    context.add_cookies(page.context.cookies())
    axe_page = context.new_page()
    try:
        for scheme in ("light", "dark"):
            axe_page.emulate_media(color_scheme=scheme)
            type_in_the_box(axe_page, "tsk_axe")
            axe_page.keyboard.press("ArrowDown")
            save_screenshot(axe_page, SHOTS / f"search-dropdown-{scheme}.png")
            axe_page.add_script_tag(path=str(AXE))
            result = axe_page.evaluate(
                "async () => await axe.run(document.querySelector('header'))"
            )
            serious = [
                (v["id"], [n["target"] for n in v["nodes"][:3]])
                for v in result["violations"]
                if v["impact"] in ("critical", "serious")
            ]
            assert not serious, (scheme, serious)
            assert any(p["id"] == "aria-required-children" for p in result["passes"])
    finally:
        context.close()


@pytest.mark.parametrize("javascript", [True, False], ids=["with-js", "without-js"])
def test_more_results_page_through_a_group(
    browser, live_server, page: Page, support_login, javascript
):
    for i in range(25):
        seed(f"tsk_more_{i:02d}", minute=i)
    context = browser.new_context(base_url=live_server.url, java_script_enabled=javascript)
    context.add_cookies(page.context.cookies())
    other = context.new_page()
    try:
        other.goto("/search/?q=tsk_more_")
        tasks = other.locator('section[data-kind="tasks"]')
        expect(tasks.locator("li")).to_have_count(20)
        expect(tasks.locator("li").first).to_contain_text("tsk_more_24")  # newest first
        tasks.get_by_role("link", name=re.compile("more results")).click()
        other.wait_for_url(re.compile(r"more=tasks&after="))
        page_two = other.locator('section[data-kind="tasks"] li')
        expect(page_two).to_have_count(5)
        expect(page_two.first).to_contain_text("tsk_more_04")
        expect(page_two.last).to_contain_text("tsk_more_00")
        # The URL holds the state: Back returns to the first page, a reload keeps page two.
        other.reload()
        expect(other.locator('section[data-kind="tasks"] li')).to_have_count(5)
        other.go_back()
        expect(other.locator('section[data-kind="tasks"] li')).to_have_count(20)
    finally:
        context.close()
