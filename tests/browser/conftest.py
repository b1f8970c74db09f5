"""Browser tests: Debian's Chromium driven through Playwright against ``live_server``.

Never downloads a browser: Chromium is launched from Debian's packages only
(`.ci/run` installs them when they are missing). A failing test leaves a
full-page screenshot in ``test-output/screenshots/<test name>.png``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.test import Client

# Debian's headless shell (package chromium-headless-shell): the same Chromium build as
# /usr/bin/chromium, and what Playwright itself runs for headless Chromium. It costs about
# a third of the full browser's CPU per page load (bench/README.md, "The test suite's
# time"). The full browser where the shell is not installed; TEST_CHROMIUM picks either.
HEADLESS_SHELL = "/usr/bin/chromium-headless-shell"
CHROMIUM = os.environ.get("TEST_CHROMIUM") or (
    HEADLESS_SHELL if os.access(HEADLESS_SHELL, os.X_OK) else "/usr/bin/chromium"
)
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
]
VIEWPORT = {"width": 1280, "height": 900}
REPO_ROOT = Path(__file__).resolve().parents[2]
SCREENSHOTS = REPO_ROOT / "test-output" / "screenshots"
HERE = Path(__file__).resolve().parent
ASYNC_UNSAFE = "DJANGO_ALLOW_ASYNC_UNSAFE"

phase_report_key = pytest.StashKey[dict[str, pytest.TestReport]]()
# Chromium's answer when no compositor frame came for a capture: a known headless flake
# (seen here once, on a full-page shot in the accessibility test), not the page's fault.
NO_FRAME = "Unable to capture screenshot"


def pytest_itemcollected(item: pytest.Item) -> None:
    """Mark this folder's tests ``browser`` as they are collected.

    Before any ``collection_modifyitems`` hook, so ``-m "not browser"`` (which
    deselects there) really leaves them out.
    """
    if HERE in Path(item.path).resolve().parents:
        item.add_marker(pytest.mark.browser)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Run this folder's tests after every other test.

    Last (after pytest-django's database ordering), because while Playwright runs
    it keeps an asyncio loop running in the main thread: no other test may run then.
    """
    browser_items = [item for item in items if HERE in Path(item.path).resolve().parents]
    ids = {id(item) for item in browser_items}
    items[:] = [item for item in items if id(item) not in ids] + browser_items


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> pytest.TestReport:
    """Keep each phase's report on the item, for the page fixture's teardown."""
    report = yield
    item.stash.setdefault(phase_report_key, {})[report.when] = report
    return report


@pytest.fixture(scope="session")
def playwright() -> Iterator:
    from playwright.sync_api import sync_playwright

    if not os.access(CHROMIUM, os.X_OK):
        pytest.skip(
            f"{CHROMIUM} is missing: apt-get install chromium-headless-shell"
            " (never `playwright install`)"
        )
    # Playwright's sync API keeps an asyncio loop "running" in the main thread
    # while it is started, so Django would refuse every ORM call the tests make
    # (seeding, users, the transactional_db flush). Allowed only meanwhile: the
    # variable must not leak into other tests (it also fails `check --deploy`).
    previous = os.environ.get(ASYNC_UNSAFE)
    os.environ[ASYNC_UNSAFE] = "true"
    try:
        with sync_playwright() as p:
            yield p
    finally:
        if previous is None:
            os.environ.pop(ASYNC_UNSAFE, None)
        else:
            os.environ[ASYNC_UNSAFE] = previous


@pytest.fixture(scope="session")
def browser(playwright) -> Iterator:
    browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
    yield browser
    browser.close()


@pytest.fixture
def page(request: pytest.FixtureRequest, browser, transactional_db, live_server) -> Iterator:
    """A fresh browser context (no cookies) and page, 1280x900."""
    context = browser.new_context(viewport=VIEWPORT, base_url=live_server.url)
    context.set_default_timeout(10_000)
    page = context.new_page()
    yield page
    reports = request.node.stash.get(phase_report_key, {})
    if any(r.failed for r in reports.values()):
        name = re.sub(r"[^\w.\-\[\]]+", "_", request.node.name)
        try:
            save_screenshot(page, SCREENSHOTS / f"{name}.png", full_page=True)
        except Exception as exc:  # a crashed page must not hide the real failure
            print(f"could not save a screenshot for {request.node.nodeid}: {exc}")
    context.close()


def save_screenshot(page, path: Path, **options) -> None:
    """A screenshot for a human to look at (``Page.screenshot`` options): its folder made,
    and asked for again, up to three times, when Chromium had no frame to capture."""
    from playwright.sync_api import Error

    path.parent.mkdir(parents=True, exist_ok=True)
    for attempt in range(3):
        try:
            page.screenshot(path=str(path), **options)
            return
        except Error as exc:
            if NO_FRAME not in str(exc) or attempt == 2:
                raise


def login(
    page, live_server, username: str, password: str, *, through_the_form: bool = False
) -> None:
    """Log in as ``username`` and wait until the console's first page shows them.

    ``through_the_form``: type into the real /login/ form and submit it (the tests whose
    flow includes logging in: console flows, CSP; SSO has its own). Otherwise the page
    gets the session that form would give it, made by Django's own ``login()`` (its
    signals, so the audit log and django-axes, included): the form's two page loads and
    redirect cost Chromium about 0.4 CPU-seconds a test (bench/README.md).
    """
    if through_the_form:
        page.goto(f"{live_server.url}/login/")
        page.locator("#id_username").fill(username)
        page.locator("#id_password").fill(password)
        page.get_by_role("button", name="Log in").click()
        page.wait_for_url(lambda url: "/login/" not in url)
    else:
        user = get_user_model().objects.get(username=username)
        assert user.check_password(password), f"not {username}'s password"
        client = Client()
        client.force_login(user)
        cookie = client.cookies[settings.SESSION_COOKIE_NAME]
        page.context.add_cookies(
            [{"name": cookie.key, "value": cookie.value, "url": live_server.url}]
        )
        page.goto(f"{live_server.url}/")
    header = page.locator("header.topbar .who")
    assert username in header.inner_text(), f"{username} is not shown as logged in"
