"""Issue #15, point 1, in Chromium: sign in through a real OpenID Connect provider
(tests/oidc_provider, its own process on 127.0.0.1), roles following its groups,
RP-initiated logout, and the login page without passwords."""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import parse_qs, urlsplit

import pytest
from django.conf import settings as django_settings
from django.contrib.auth import get_user_model
from playwright.sync_api import Page, expect

from beeos_console.auditlog.models import AuditEntry

from ..oidc_provider.harness import PROVIDER_NAME, configure_console, running_provider

SIGN_IN = f"Sign in with {PROVIDER_NAME}"


@pytest.fixture(scope="module")
def provider(live_server) -> Iterator:
    with running_provider(django_settings.DATABASES["default"]) as running:
        running.register_client(live_server.url)
        yield running


def sign_in_at_provider(page: Page, provider, username: str, password: str) -> None:
    page.wait_for_url(f"{provider.url}/accounts/login/**")
    page.locator("#idp-username").fill(username)
    page.locator("#idp-password").fill(password)
    page.get_by_role("button", name="Sign in to the identity provider").click()


def requests_to(page: Page, path: str) -> list[str]:
    seen: list[str] = []
    page.on("request", lambda request: seen.append(request.url) if path in request.url else None)
    return seen


def test_sign_in_roles_and_logout_through_the_provider(page: Page, live_server, settings, provider):
    configure_console(settings, provider)
    sub = provider.add_user("bea", "pw-bea-1", ["beeos-support"])
    authorize = requests_to(page, "/o/authorize/")
    end_session = requests_to(page, "/o/logout/")

    # First login: a support user, created on the way.
    page.goto(f"{live_server.url}/login/?next=/tasks/")
    page.get_by_role("link", name=SIGN_IN).click()
    sign_in_at_provider(page, provider, "bea", "pw-bea-1")
    page.wait_for_url(f"{live_server.url}/tasks/")
    expect(page.locator("header.topbar .who")).to_contain_text(sub)
    expect(page.get_by_role("link", name="Tasks", exact=True)).to_be_visible()
    expect(page.get_by_role("link", name="Bulk jobs")).to_have_count(0)  # not an operator
    challenge = parse_qs(urlsplit(authorize[0]).query)
    assert challenge["code_challenge_method"] == ["S256"] and challenge["code_challenge"][0]

    # Logout ends the provider's session too (RP-initiated), back on the login page.
    page.get_by_role("button", name="Log out").click()
    page.wait_for_url(f"{live_server.url}/login/")
    hint = parse_qs(urlsplit(end_session[0]).query)
    assert hint["post_logout_redirect_uri"] == [f"{live_server.url}/login/"]
    assert hint["id_token_hint"][0]
    assert provider.sessions("bea") == 0

    # Moved to the ops group: the provider asks for the password again (its session
    # ended), and the console gives the operator role instead of support.
    provider.set_groups("bea", ["beeos-ops"])
    page.get_by_role("link", name=SIGN_IN).click()
    sign_in_at_provider(page, provider, "bea", "pw-bea-1")
    page.wait_for_url(f"{live_server.url}/")
    expect(page.get_by_role("link", name="Bulk jobs")).to_be_visible()
    user = get_user_model().objects.get(username=sub)
    assert set(user.groups.values_list("name", flat=True)) == {"operator"}

    # Out of every mapped group: logged in, but no page of the console opens.
    provider.set_groups("bea", ["finance"])
    page.get_by_role("button", name="Log out").click()
    page.wait_for_url(f"{live_server.url}/login/")
    page.get_by_role("link", name=SIGN_IN).click()
    sign_in_at_provider(page, provider, "bea", "pw-bea-1")
    page.wait_for_url(f"{live_server.url}/")
    expect(page.get_by_role("heading", name="Not allowed")).to_be_visible()
    expect(page.locator("main")).to_contain_text("support role")

    changes = AuditEntry.objects.filter(object_id=sub, action__startswith="user.role_")
    assert [(e.action, e.detail["role"]) for e in changes.order_by("id")] == [
        ("user.role_granted", "support"),
        ("user.role_granted", "operator"),
        ("user.role_revoked", "support"),
        ("user.role_revoked", "operator"),
    ]
    logins = AuditEntry.objects.filter(object_id=sub, action="login.succeeded")
    logouts = AuditEntry.objects.filter(object_id=sub, action="logout")
    assert logins.count() == 3 and logouts.count() == 2


def test_without_passwords_the_login_page_has_only_the_sso_button(
    page: Page, live_server, settings, provider
):
    configure_console(settings, provider, password_login=False)
    provider.add_user("cleo", "pw-cleo-1", ["beeos-admins"])

    page.goto(f"{live_server.url}/login/")
    expect(page.get_by_role("link", name=SIGN_IN)).to_be_visible()
    expect(page.locator("#id_password")).to_have_count(0)
    expect(page.get_by_role("button", name="Log in")).to_have_count(0)

    page.get_by_role("link", name=SIGN_IN).click()
    sign_in_at_provider(page, provider, "cleo", "pw-cleo-1")
    page.wait_for_url(f"{live_server.url}/")
    expect(page.get_by_role("link", name="Audit log")).to_be_visible()


def test_a_forged_answer_shows_a_clear_page(page: Page, live_server, settings, provider):
    configure_console(settings, provider)
    page.goto(f"{live_server.url}/oidc/callback/?code=stolen&state=forged")
    expect(page.get_by_role("heading", name="Single sign-on failed")).to_be_visible()
    expect(page.locator("main")).to_contain_text("does not belong to a sign-in started")
    expect(page.get_by_role("link", name=SIGN_IN)).to_be_visible()
