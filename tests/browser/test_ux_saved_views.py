"""Saved views in Chromium: rename and re-share in place (htmx), take a list's current
filters, and the same without JavaScript."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import Group
from playwright.sync_api import Page, expect

from beeos_console.auditlog.models import AuditEntry
from beeos_console.core import roles
from beeos_console.savedviews.models import SavedView

from .conftest import login
from .test_console_flows import seed_tasks

PASSWORD = "browser-Pw-4410"


@pytest.fixture
def operator(page: Page, live_server, django_user_model):
    user = django_user_model.objects.create_user(username="otto-views", password=PASSWORD)
    user.groups.add(Group.objects.get_or_create(name=roles.OPERATOR)[0])
    login(page, live_server, "otto-views", PASSWORD)
    return user


def test_rename_and_unshare_in_place(page: Page, operator):
    view = SavedView.objects.create(
        owner=operator, name="Failing", kind="tasks", query="status=failed", shared=True
    )
    page.goto("/views/")
    row = page.locator(f"#saved-view-{view.pk}")
    row.get_by_role("link", name="Edit").click()
    form = page.get_by_role("form", name=re.compile("Edit the saved view"))
    name = form.get_by_label("Name")
    expect(name).to_be_focused()
    expect(page).to_have_url(re.compile(r"/views/$"))  # in place, no page change
    name.fill("Failing tasks, mine")
    form.get_by_label("Share with the whole team").uncheck()
    form.get_by_role("button", name="Save changes").click()
    expect(row).to_contain_text("Failing tasks, mine")
    expect(row).to_contain_text("private")
    expect(row.get_by_role("status")).to_contain_text("Saved “Failing tasks, mine”.")
    expect(page).to_have_url(re.compile(r"/views/$"))
    view.refresh_from_db()
    assert (view.name, view.shared) == ("Failing tasks, mine", False)
    assert AuditEntry.objects.filter(action="saved_view.update", object_id=str(view.pk)).exists()

    # Cancel puts the row back unchanged; a blank name is refused in place.
    row.get_by_role("link", name="Edit").click()
    page.get_by_role("link", name="Cancel").click()
    expect(row.get_by_role("link", name="Edit")).to_be_visible()
    row.get_by_role("link", name="Edit").click()
    page.get_by_label("Name").fill(" ")
    page.get_by_label("Name").evaluate("el => el.removeAttribute('required')")
    page.get_by_role("button", name="Save changes").click()
    expect(row.locator(".error")).to_be_visible()
    assert SavedView.objects.get(pk=view.pk).name == "Failing tasks, mine"


def test_update_a_saved_view_with_the_lists_current_filters(page: Page, operator):
    seed_tasks()
    view = SavedView.objects.create(
        owner=operator, name="Team view", kind="tasks", query="status=failed", shared=True
    )
    page.goto("/tasks/?status=processing&sort=stuck")
    page.locator("details.save-view summary").click()
    page.get_by_role("link", name=re.compile("update a saved view with these filters")).click()
    expect(page.get_by_role("status").first).to_contain_text("status=processing&sort=stuck")
    page.locator(f"#saved-view-{view.pk}").get_by_role(
        "link", name="Update with these filters…"
    ).click()
    replace = page.get_by_label(re.compile("Replace them with the list's current filters"))
    expect(replace).to_be_checked()
    page.get_by_role("button", name="Save changes").click()
    expect(page.locator(f"#saved-view-{view.pk}")).to_contain_text("status=processing&sort=stuck")
    page.locator(f"#saved-view-{view.pk}").get_by_role("link", name="Team view").click()
    page.wait_for_url(re.compile(r"/tasks/\?status=processing&sort=stuck$"))
    expect(page.locator(".sort-note")).to_contain_text("Longest stuck first")


def test_without_javascript_edit_is_a_page(browser, live_server, page: Page, operator):
    view = SavedView.objects.create(owner=operator, name="Plain", kind="tasks", query="")
    context = browser.new_context(base_url=live_server.url, java_script_enabled=False)
    context.add_cookies(page.context.cookies())
    plain = context.new_page()
    try:
        plain.goto("/views/")
        plain.locator(f"#saved-view-{view.pk}").get_by_role("link", name="Edit").click()
        plain.wait_for_url(re.compile(rf"/views/{view.pk}/edit/$"))
        expect(plain.locator("h1")).to_contain_text("Edit saved view “Plain”")
        plain.get_by_label("Name").fill("Plain, renamed")
        plain.get_by_label("Share with the whole team").check()
        plain.get_by_role("button", name="Save changes").click()
        plain.wait_for_url(re.compile(r"/views/\?kind=tasks$"))
        expect(plain.locator(".flash")).to_contain_text("Saved “Plain, renamed”.")
        expect(plain.locator(f"#saved-view-{view.pk}")).to_contain_text("shared")
    finally:
        context.close()
    view.refresh_from_db()
    assert (view.name, view.shared) == ("Plain, renamed", True)
