"""Issue #14, point 9 ("Everywhere, everyone"): narrow screens, keyboard, dark mode, axe-core.

Every page the console has is visited as an admin (who sees them all): at 390 px
nothing scrolls sideways and the navigation stays reachable, a skip link leads to
the main content, j/k/Enter/? work on lists, dark mode follows the system and the
header toggle, and axe-core (vendored, pinned: ``make vendor-axe``) finds no
critical or serious violation. Screenshots of every page at 1440 and 390 px (taken
on the skip-link and the 390 px visits) land in ``test-output/screenshots/pages/``
for a human to look at. Beside the admin's
pages: the login page (logged out), the 400 / 403 / 404 / 500 pages (403 as
support staff; 500 from a URL that fails, ``ux_urls``), a bulk job's and a
projection job's page, and the saved views' list and edit pages.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pytest
from django.contrib.auth.models import Group
from django.urls import reverse
from playwright.sync_api import BrowserContext, Page, expect

from beeos_console.auditlog.services import Actor
from beeos_console.cancels import bulk
from beeos_console.core import roles
from beeos_console.projection.reprojection import run_projection_job, start_job
from beeos_console.savedviews.models import SavedView
from tasks.models import Task
from tasks.services.write import ingest_message

from .conftest import HERE, SCREENSHOTS, login, save_screenshot
from .test_console_flows import PASSWORD, iso, seed_operations, seed_tasks

AXE = HERE / "vendor" / "axe-core-4.14.1.min.js"
NARROW = {"width": 390, "height": 844}
SHOTS = SCREENSHOTS / "pages"
WIDE = {"width": 1440, "height": 900}


@dataclass(frozen=True)
class Visit:
    """A page and who looks at it: the admin (``page``), support staff, or nobody logged in."""

    path: str
    who: str = "admin"
    # The main navigation is on it: logged in, and not a bare error page (400, 500).
    nav: bool = True


@pytest.fixture
def pages(page: Page, live_server, django_user_model, settings) -> dict[str, Visit]:
    """Seed tasks, operations, a message, jobs, a saved view; log in as an admin; every
    page by name."""
    settings.ROOT_URLCONF = "tests.browser.ux_urls"  # the console's URLs and one that fails
    seed_tasks()
    seed_operations()
    ingest_message(
        {
            "id": "msg_a11y_1",
            "conversation_id": "tsk_failed_Z20",
            "type": "agent_reply",
            "sender": "agt_Fz3Kq8LmW2Xv",
            "body": "Could not reach the mailbox.",
            "state": "failed",
            "stop_reason": "error",
            "created_at": iso(2),
        },
        actor=Actor.system(),
    )
    user = django_user_model.objects.create_user(username="ada-a11y", password=PASSWORD)
    for role in (roles.SUPPORT, roles.OPERATOR, roles.ADMIN):
        user.groups.add(Group.objects.get_or_create(name=role)[0])
    login(page, live_server, "ada-a11y", PASSWORD)

    # A finished bulk cancel and a finished projection audit, run as the worker runs them.
    admin = Actor.of_user(user)
    selection = bulk.preview("task", Task.objects.filter(status__in=["queued", "processing"]))
    batch = bulk.start(selection, actor=admin, reason="stuck since the outage", query="")
    bulk.run_bulk_cancel.call(batch.pk)
    job = start_job("audit", actor=admin)
    run_projection_job.call(job.pk)
    view = SavedView.objects.create(
        owner=user, name="Failing, team", kind="tasks", query="status=failed", shared=True
    )

    page.goto(reverse("operations:list"))
    operation_detail = page.locator("main table.list tbody tr a[href]").first.get_attribute("href")
    paths = {
        "dashboard": reverse("dashboard"),
        "tasks": reverse("tasks:list"),
        "operations": reverse("operations:list"),
        "messages": reverse("tasks:messages"),
        "task-detail": "/tasks/tsk_timeout_Q81/?protocol=openapi",
        "operation-detail": operation_detail,
        "saved-views": reverse("saved-views:list"),
        "saved-view-edit": reverse("saved-views:edit", args=[view.pk]) + "?query=status%3Dfailed",
        "bulk-jobs": reverse("bulk:list"),
        "bulk-job": reverse("bulk:detail", args=[batch.pk]),
        "search": reverse("search") + "?q=tsk_failed",
        "audit-log": reverse("audit:log"),
        "projection-audit": reverse("audit:projections"),
        "projection-job": reverse("audit:projection-job", args=[job.pk]),
        "lockouts": reverse("audit:lockouts"),
        "scorecards": reverse("agents:scorecards"),
        "not-found": "/tasks/tsk_no_such_task/",
    }
    return {
        **{name: Visit(path) for name, path in paths.items()},
        "login": Visit(reverse("login"), who="anonymous", nav=False),
        "bad-request": Visit("/tasks/?q=a%00b", nav=False),
        "forbidden": Visit(reverse("audit:log"), who="support"),
        "server-error": Visit("/__ux__/fail/", nav=False),
    }


STATUS = {"not-found": 404, "bad-request": 400, "forbidden": 403, "server-error": 500}


@pytest.fixture
def audiences(
    browser, live_server, page: Page, pages: dict[str, Visit], django_user_model
) -> Iterator[Callable[..., Page]]:
    """``page_for(who, viewport, **options)``: the admin's ``page`` (same viewport, no
    options), else a page of its own for support staff or for nobody logged in."""
    user = django_user_model.objects.create_user(username="sam-a11y", password=PASSWORD)
    user.groups.add(Group.objects.get_or_create(name=roles.SUPPORT)[0])
    opened: dict[tuple, Page] = {}

    def page_for(who: str, viewport: dict | None = None, **options) -> Page:
        if who == "admin" and not options:
            if viewport:
                page.set_viewport_size(viewport)
            return page
        key = (who, tuple((viewport or {}).items()), tuple(sorted(options.items())))
        if key not in opened:
            context = browser.new_context(
                viewport=viewport or WIDE, base_url=live_server.url, **options
            )
            context.set_default_timeout(10_000)
            if options.get("bypass_csp"):
                load_axe(context)
            if who == "admin":
                context.add_cookies(page.context.cookies())
            other = opened[key] = context.new_page()
            if who == "support":
                login(other, live_server, "sam-a11y", PASSWORD)
        return opened[key]

    yield page_for
    for other in opened.values():
        other.context.close()


def visit(page: Page, path: str, name: str = "") -> None:
    response = page.goto(path)
    page.wait_for_load_state("load")
    if name:
        assert response is not None and response.status == STATUS.get(name, 200), name


def admin_paths(pages: dict[str, Visit]) -> dict[str, str]:
    """The admin's pages with the navigation (the tests below that need it)."""
    return {name: v.path for name, v in pages.items() if v.who == "admin" and v.nav}


def test_at_390_px_no_page_scrolls_sideways_and_the_navigation_stays_reachable(
    pages: dict[str, Visit], audiences
):
    for name, v in pages.items():
        page = audiences(v.who, NARROW)
        visit(page, v.path, name)
        screenshot(page, name, NARROW)
        widths = page.evaluate(
            "() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]"
        )
        assert widths[0] <= widths[1], f"{name} scrolls sideways at 390 px: {widths}"
        nav = page.get_by_role("navigation", name="Main")
        controls = [page.get_by_role("link", name=re.compile("BeeOS Operator Console"))]
        if v.nav:
            controls += [
                nav.get_by_role("link", name="Tasks"),
                page.get_by_role("button", name="Log out"),
                page.locator("#console-search"),
            ]
            if v.who == "admin":
                controls.append(nav.get_by_role("link", name="Lockouts"))
        if name == "login":
            controls += [page.get_by_label("Username"), page.get_by_role("button", name="Log in")]
        for control in controls:
            expect(control).to_be_visible()
            box = control.bounding_box()
            assert box and box["x"] >= 0 and box["x"] + box["width"] <= NARROW["width"], name


def test_a_skip_link_leads_to_the_main_content_on_every_page(pages: dict[str, Visit], audiences):
    for name, v in pages.items():
        page = audiences(v.who, WIDE)
        visit(page, v.path, name)
        screenshot(page, name, WIDE)  # before the skip link moves the focus
        if page.locator("main [autofocus]").count():
            # The login form starts in its first field: already in the main content.
            expect(page.locator("main [autofocus]"), name).to_be_focused()
            continue
        page.keyboard.press("Tab")
        skip = page.get_by_role("link", name="Skip to main content")
        expect(skip, name).to_be_focused()
        expect(skip, name).to_be_in_viewport()
        page.keyboard.press("Enter")
        expect(page, name).to_have_url(re.compile(r"#main$"))
        expect(page.locator("main#main"), name).to_be_focused()


def test_j_k_move_through_rows_enter_opens_and_question_mark_lists_the_keys(
    page: Page, pages: dict[str, Visit]
):
    pages = admin_paths(pages)
    visit(page, pages["tasks"])
    rows = page.locator("main table.list tbody tr")
    page.keyboard.press("j")
    expect(rows.nth(0)).to_have_class(re.compile(r"\brow-selected\b"))
    outline = rows.nth(0).evaluate("r => getComputedStyle(r).outlineStyle")
    assert outline == "solid", "the selected row has no visible mark"
    page.keyboard.press("j")
    page.keyboard.press("j")
    page.keyboard.press("k")
    expect(rows.nth(1)).to_have_class(re.compile(r"\brow-selected\b"))
    expect(page.locator("tr.row-selected")).to_have_count(1)
    href = rows.nth(1).locator("a[href]").first.get_attribute("href")
    page.keyboard.press("Enter")
    expect(page).to_have_url(re.compile(re.escape(href) + "$"))

    # "?" shows the keys; Escape closes them.
    page.keyboard.press("?")
    dialog = page.get_by_role("dialog", name="Keyboard shortcuts")
    expect(dialog).to_be_visible()
    expect(dialog).to_contain_text("j")
    page.keyboard.press("Escape")
    expect(dialog).to_be_hidden()

    # Never while typing in a field.
    visit(page, pages["tasks"])
    page.keyboard.press("/")
    expect(page.locator("#console-search")).to_be_focused()
    page.keyboard.type("jk?")
    expect(page.locator("#console-search")).to_have_value("jk?")
    expect(page.locator("tr.row-selected")).to_have_count(0)
    expect(dialog).to_be_hidden()


def background(page: Page) -> str:
    return page.evaluate("() => getComputedStyle(document.body).backgroundColor")


def is_dark(colour: str) -> bool:
    r, g, b = (int(n) for n in re.findall(r"\d+", colour)[:3])
    return (r + g + b) / 3 < 80


def test_dark_mode_follows_the_system_and_the_toggle_is_remembered(
    page: Page, pages: dict[str, Visit]
):
    pages = admin_paths(pages)
    visit(page, pages["dashboard"])
    assert not is_dark(background(page))
    page.emulate_media(color_scheme="dark")
    assert is_dark(background(page)), "the system's dark setting is not followed"
    toggle = page.get_by_role("button", name="Dark mode")
    expect(toggle).to_have_attribute("aria-pressed", "true")

    toggle.click()  # light, though the system is dark
    assert not is_dark(background(page))
    visit(page, pages["tasks"])
    assert not is_dark(background(page)), "the choice is not remembered"
    expect(toggle).to_have_attribute("aria-pressed", "false")

    page.emulate_media(color_scheme="light")
    toggle.click()  # dark, though the system is light
    visit(page, pages["dashboard"])
    assert is_dark(background(page))
    expect(toggle).to_have_attribute("aria-pressed", "true")


def load_axe(context: BrowserContext) -> BrowserContext:
    """axe-core in every page the context opens: sent to the browser once, not once a page
    (a 0.5 MB script; 0.1-0.2 s a page over Playwright's connection)."""
    context.add_init_script(path=str(AXE))
    return context


def axe_violations(page: Page) -> list[str]:
    if not page.evaluate("() => typeof axe !== 'undefined'"):
        page.add_script_tag(path=str(AXE))
    # Only violations are gathered node by node; passes keep one node per rule
    # (axe-core's resultTypes), enough to tell that axe checked something.
    result = page.evaluate("async () => await axe.run(document, {resultTypes: ['violations']})")
    assert result["passes"], "axe-core checked nothing"
    return [
        f"{v['impact']} {v['id']}: {v['help']} -> "
        + "; ".join(" ".join(node["target"]) for node in v["nodes"][:5])
        for v in result["violations"]
        if v["impact"] in ("critical", "serious")
    ]


def test_axe_finds_no_critical_or_serious_violation(pages: dict[str, Visit], audiences):
    # axe is injected as a script: only these contexts may bypass the CSP.
    found = {}
    for scheme in ("light", "dark"):
        for name, v in pages.items():
            axe_page = audiences(v.who, WIDE, bypass_csp=True)
            axe_page.emulate_media(color_scheme=scheme)
            visit(axe_page, v.path, name)
            if violations := axe_violations(axe_page):
                found[f"{name} ({scheme})"] = violations
    assert not found, found


def screenshot(page: Page, name: str, size: dict[str, int]) -> None:
    """A full-page shot for a human to look at (``test-output/screenshots/pages/``), taken
    by the tests that visit every page at 390 and at 1440 px."""
    target = SHOTS / f"{name}-{size['width']}.png"
    save_screenshot(page, target, full_page=True, animations="disabled", timeout=30_000)
    assert target.stat().st_size > 0
