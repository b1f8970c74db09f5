"""Issue #15, point 4, in Chromium: the console in Simplified Chinese.

An operator whose browser asks for Chinese walks the dashboard, the task list, a
task's page and cancels it, all in Chinese (screenshots at 1280 and 390 px in
``test-output/screenshots/zh-hans/``); the header switcher changes the language
without JavaScript and the choice outlives the page; raw values stay as they are;
axe-core finds no critical or serious violation on the Chinese pages.
"""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import Group
from django.urls import reverse
from playwright.sync_api import Page, expect

from beeos_console.core import roles

from .conftest import SCREENSHOTS, login, save_screenshot
from .test_accessibility import NARROW, axe_violations, load_axe
from .test_console_flows import PASSWORD, seed_operations, seed_tasks

SHOTS = SCREENSHOTS / "zh-hans"
WIDE = {"width": 1280, "height": 900}


@pytest.fixture
def operator(django_user_model) -> str:
    seed_tasks()
    seed_operations()
    user = django_user_model.objects.create_user(username="olga-zh", password=PASSWORD)
    user.groups.add(Group.objects.get_or_create(name=roles.SUPPORT)[0])
    user.groups.add(Group.objects.get_or_create(name=roles.OPERATOR)[0])
    return "olga-zh"


@pytest.fixture
def chinese(browser, live_server, transactional_db, operator):
    """A browser whose language is Chinese (Accept-Language: zh-CN), logged in."""
    context = browser.new_context(viewport=WIDE, base_url=live_server.url, locale="zh-CN")
    context.set_default_timeout(10_000)
    page = context.new_page()
    page.goto(reverse("login"))
    expect(page.locator("html")).to_have_attribute("lang", "zh-hans")
    page.get_by_label("用户名").fill(operator)
    page.get_by_label("密码").fill(PASSWORD)
    page.get_by_role("button", name="登录").click()
    page.wait_for_url(lambda url: "/login/" not in url)
    yield page
    context.close()


def shoot(page: Page, name: str) -> None:
    """The page at 1280 px, then at 390 px (full height), for a human to look at."""
    save_screenshot(page, SHOTS / f"{name}-1280.png", full_page=True)
    page.set_viewport_size(NARROW)
    save_screenshot(page, SHOTS / f"{name}-390.png", full_page=True)
    widths = page.evaluate(
        "() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]"
    )
    assert widths[0] <= widths[1], f"{name} scrolls sideways at 390 px in Chinese: {widths}"
    page.set_viewport_size(WIDE)


def test_an_operator_walks_the_console_and_cancels_a_task_in_chinese(chinese: Page):
    page = chinese
    # Dashboard.
    expect(page.get_by_role("heading", level=1)).to_have_text("仪表盘")
    nav = page.get_by_role("navigation", name="主导航")
    expect(nav.get_by_role("link", name="任务")).to_be_visible()
    expect(page.get_by_role("heading", name="按产品状态统计的任务")).to_be_visible()
    expect(page.locator("header .lang-current")).to_have_text("简体中文")
    shoot(page, "dashboard")

    # The task list: Chinese words around raw values that stay as they are.
    nav.get_by_role("link", name="任务").click()
    page.wait_for_url("**/tasks/")
    expect(page.get_by_role("heading", level=1)).to_have_text("任务")
    expect(page.get_by_role("button", name="应用")).to_be_visible()
    results = page.locator("#results")
    expect(results).to_contain_text("匹配")
    expect(results.locator("code.raw", has_text=re.compile(r"^timeout$"))).to_have_count(1)
    expect(results.locator(".badge", has_text="失败").first).to_be_visible()
    shoot(page, "task-list")

    # A task's page: the banner, the status card and the times (UTC, in both languages).
    page.goto("/tasks/tsk_timeout_Q81/?protocol=openapi")
    expect(page.locator(".banner").first).to_contain_text("结果不确定。")
    card = page.locator("#status-card")
    expect(card).to_contain_text("如何处理：")
    expect(card.locator("code.raw")).to_have_text("timeout")
    expect(page.locator("time").first).to_contain_text("UTC")
    shoot(page, "task-detail")

    # A cancel, as an operator, in Chinese.
    page.goto("/tasks/tsk_running_B02/?protocol=openapi")
    area = page.locator("#cancel-area")
    area.get_by_text("取消此任务…").click()
    area.get_by_label("原因（必填，会记入审计日志）").fill("客户要求停止")
    area.get_by_role("button", name="取消任务").click()
    expect(area).to_contain_text("已取消。")
    expect(page.locator("#status-card .badge")).to_have_text("已取消")
    expect(page.locator("#audit-trail")).to_contain_text("客户要求停止")
    expect(page.locator("#audit-trail code", has_text="task.cancel")).to_be_visible()
    shoot(page, "task-cancelled")


def test_the_header_switcher_changes_the_language_and_remembers_it(
    page: Page, live_server, operator
):
    login(page, live_server, operator, PASSWORD)  # an English browser
    page.goto(reverse("tasks:list") + "?status=failed")
    expect(page.locator("html")).to_have_attribute("lang", "en")
    switcher = page.get_by_role("form", name="Language")
    switcher.get_by_role("button", name="简体中文").click()
    # Back on the same page, filter kept, in Chinese.
    page.wait_for_url("**/tasks/?status=failed")
    expect(page.locator("html")).to_have_attribute("lang", "zh-hans")
    expect(page.get_by_role("heading", level=1)).to_have_text("任务")
    cookie = {c["name"]: c for c in page.context.cookies()}["django_language"]
    assert cookie["value"] == "zh-hans" and cookie["expires"] > 0  # outlives the session

    # Another page, a new tab: still Chinese though the browser asks for English.
    other = page.context.new_page()
    other.goto(reverse("dashboard"))
    expect(other.get_by_role("heading", level=1)).to_have_text("仪表盘")
    other.get_by_role("form", name="语言").get_by_role("button", name="English").click()
    expect(other.get_by_role("heading", level=1)).to_have_text("Dashboard")
    other.close()


def test_the_switcher_works_without_javascript(browser, live_server, transactional_db):
    context = browser.new_context(base_url=live_server.url, java_script_enabled=False)
    page = context.new_page()
    page.goto(reverse("login"))
    page.get_by_role("button", name="简体中文").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("登录")
    expect(page.get_by_role("button", name="English")).to_be_visible()
    context.close()


def test_axe_finds_nothing_serious_on_the_chinese_pages(browser, live_server, chinese: Page):
    cookies = chinese.context.cookies()
    context = load_axe(
        browser.new_context(
            viewport=WIDE, base_url=live_server.url, locale="zh-CN", bypass_csp=True
        )
    )
    context.add_cookies(cookies)
    page = context.new_page()
    found = {}
    for path in (
        reverse("dashboard"),
        reverse("tasks:list"),
        "/tasks/tsk_timeout_Q81/?protocol=openapi",
        reverse("operations:list"),
        reverse("login"),
    ):
        page.goto(path)
        expect(page.locator("html")).to_have_attribute("lang", "zh-hans")
        if violations := axe_violations(page):
            found[path] = violations
    context.close()
    assert not found, found
