"""Issue #15, point 1: single sign-on (OIDC) against a real provider.

The provider is tests/oidc_provider (django-oauth-toolkit, RS256, PKCE required) in its
own process and database; the console's side is mozilla-django-oidc, unmocked: every
token, JWKS and userinfo call goes over HTTP. The provider's login form is driven with
``requests`` here (tests/browser/test_sso_browser.py does it in Chromium).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urlsplit, urlunsplit

import pytest
import requests
from django.conf import settings as django_settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from rest_framework.test import APIClient

from beeos_console.auditlog.models import AuditEntry
from beeos_console.core import tokens

from .oidc_provider.harness import CLIENT_ID, CLIENT_SECRET, configure_console, running_provider

pytestmark = pytest.mark.django_db
ROOT = Path(__file__).resolve().parents[1]
CONSOLE = "http://testserver"


@pytest.fixture(scope="module")
def provider() -> Iterator:
    with running_provider(django_settings.DATABASES["default"]) as running:
        running.register_client(CONSOLE)
        yield running


@pytest.fixture
def sso(settings, provider):
    configure_console(settings, provider)
    return provider


@pytest.fixture
def browser() -> requests.Session:
    """The person's browser at the provider (its cookies: the provider session)."""
    return requests.Session()


def start(client, **params: str) -> str:
    """Press "Sign in with …": the authorize URL the console sends the browser to."""
    answer = client.get("/oidc/authenticate/", params)
    assert answer.status_code == 302, answer.status_code
    return answer["Location"]


def back_to_console(client, location: str):
    parts = urlsplit(location)
    assert f"{parts.scheme}://{parts.netloc}" == CONSOLE, location
    return client.get(f"{parts.path}?{parts.query}")


def sign_in(client, provider, browser, username: str, password: str, **params: str):
    """The whole round trip; returns the console's answer to the callback."""
    location = provider.sign_in(browser, start(client, **params), username, password)
    return back_to_console(client, location)


def with_query(url: str, **changes: str | None) -> str:
    parts = urlsplit(url)
    query = {k: v[0] for k, v in parse_qs(parts.query).items()}
    for key, value in changes.items():
        if value is None:
            query.pop(key, None)
        else:
            query[key] = value
    return urlunsplit(parts._replace(query=urlencode(query)))


def console_roles(username: str) -> set[str]:
    user = get_user_model().objects.get(username=username)
    return set(user.groups.values_list("name", flat=True))


def entries(action: str, object_id: str) -> list[AuditEntry]:
    return list(AuditEntry.objects.filter(action=action, object_id=object_id).order_by("id"))


# --- users, roles ---------------------------------------------------------------------


def test_first_login_creates_the_user_with_the_mapped_role(client, sso, browser):
    sub = sso.add_user(
        "olivia", "pw-olivia-1", ["beeos-ops"], email="olivia@example.com", first_name="Olivia"
    )

    answer = sign_in(client, sso, browser, "olivia", "pw-olivia-1", next="/tasks/")

    assert answer.status_code == 302 and answer["Location"] == "/tasks/"
    user = get_user_model().objects.get(username=sub)  # matched by the provider's sub
    assert user.email == "olivia@example.com" and user.first_name == "Olivia"
    assert not user.has_usable_password()
    assert console_roles(sub) == {"operator"}
    assert client.get("/tasks/").status_code == 200
    assert client.get("/bulk/").status_code == 200  # an operator's page
    assert client.get("/audit/log/").status_code == 403  # an admin's
    [created] = entries("user.created", sub)
    assert created.actor == "sso" and created.detail["issuer"] == sso.issuer
    [granted] = entries("user.role_granted", sub)
    assert granted.before == {"roles": []} and granted.after == {"roles": ["operator"]}
    assert granted.detail["role"] == "operator" and granted.detail["claim_values"] == ["beeos-ops"]
    [login] = entries("login.succeeded", sub)
    assert login.detail["method"] == "sso"


def test_roles_are_synced_at_every_login(client, sso, browser):
    sub = sso.add_user("rita", "pw-rita-1", ["beeos-ops"])
    sign_in(client, sso, browser, "rita", "pw-rita-1")
    assert console_roles(sub) == {"operator"}

    # Moved from ops to admins at the provider: one role granted, one revoked.
    sso.set_groups("rita", ["beeos-admins", "finance"])
    client.post("/logout/")
    answer = sign_in(client, sso, browser, "rita", "pw-rita-1")
    assert answer.status_code == 302
    assert console_roles(sub) == {"admin"}
    assert client.get("/audit/log/").status_code == 200
    [revoked] = entries("user.role_revoked", sub)
    assert revoked.detail["role"] == "operator"
    assert revoked.before == {"roles": ["operator"]} and revoked.after == {"roles": ["admin"]}
    assert [e.detail["role"] for e in entries("user.role_granted", sub)] == ["operator", "admin"]

    # Removed from every mapped group: no role left, support pages refused.
    sso.set_groups("rita", ["finance"])
    client.post("/logout/")
    sign_in(client, sso, browser, "rita", "pw-rita-1")
    assert console_roles(sub) == set()
    assert client.get("/tasks/").status_code == 403
    last = entries("user.role_revoked", sub)[-1]
    assert last.detail["role"] == "admin" and last.after == {"roles": []}

    # The same groups again: nothing changes, nothing is audited.
    client.post("/logout/")
    sign_in(client, sso, browser, "rita", "pw-rita-1")
    assert len(entries("user.role_revoked", sub)) == 2
    assert len(entries("user.role_granted", sub)) == 2


def test_an_unmapped_group_gives_no_role(client, sso, browser):
    sub = sso.add_user("uma", "pw-uma-1", ["finance", "beeos-support-team"])

    answer = sign_in(client, sso, browser, "uma", "pw-uma-1")

    assert answer.status_code == 302  # logged in ...
    assert console_roles(sub) == set()  # ... with no role
    assert entries("user.role_granted", sub) == []
    for page in ("/", "/tasks/", "/operations/"):
        refused = client.get(page)
        assert refused.status_code == 403
        assert b"support role" in refused.content


def test_roles_given_by_hand_to_an_sso_user_follow_the_provider(client, sso, browser):
    sub = sso.add_user("hank", "pw-hank-1", ["beeos-support"])
    sign_in(client, sso, browser, "hank", "pw-hank-1")
    user = get_user_model().objects.get(username=sub)
    user.groups.add(Group.objects.get_or_create(name="admin")[0])
    client.post("/logout/")
    sign_in(client, sso, browser, "hank", "pw-hank-1")
    assert console_roles(sub) == {"support"}
    assert entries("user.role_revoked", sub)[0].detail["role"] == "admin"


def test_a_password_account_is_never_taken_over(client, sso, browser, settings, operator_user):
    """With user names from ``preferred_username``, the provider's "olga-operator" is
    not the console's password account of that name."""
    settings.OIDC_USERNAME_CLAIM = "preferred_username"
    sso.add_user("olga-operator", "pw-idp-olga-1", ["beeos-admins"])

    answer = sign_in(client, sso, browser, "olga-operator", "pw-idp-olga-1")

    assert answer.status_code == 403
    assert b"does not take over password accounts" in answer.content
    assert console_roles("olga-operator") == {"operator"}
    assert client.get("/tasks/").status_code == 302  # not logged in
    [failed] = entries("login.failed", "olga-operator")
    assert failed.detail["method"] == "sso"


def test_a_disabled_account_is_refused(client, sso, browser):
    sub = sso.add_user("dora", "pw-dora-1", ["beeos-support"])
    sign_in(client, sso, browser, "dora", "pw-dora-1")
    get_user_model().objects.filter(username=sub).update(is_active=False)
    assert client.get("/tasks/").status_code == 302  # the session ended with it

    answer = sign_in(client, sso, browser, "dora", "pw-dora-1")

    assert answer.status_code == 403
    assert b"disabled" in answer.content


# --- the protocol: PKCE, state, nonce ----------------------------------------------------


def test_pkce_is_used_and_required(client, sso, browser):
    sso.add_user("pia", "pw-pia-1", ["beeos-support"])
    authorize = start(client)
    query = parse_qs(urlsplit(authorize).query)
    assert query["code_challenge_method"] == ["S256"]
    assert len(query["code_challenge"][0]) == 43  # base64url SHA-256
    assert query["response_type"] == ["code"] and query["client_id"] == [CLIENT_ID]
    assert "nonce" in query and "state" in query

    # The provider refuses an authorization request without a challenge ...
    refused = sso.sign_in(browser, with_query(authorize, code_challenge=None), "pia", "pw-pia-1")
    assert parse_qs(urlsplit(refused).query)["error"] == ["invalid_request"]
    # ... and a code exchanged without the verifier.
    callback = sso.sign_in(browser, authorize, "pia", "pw-pia-1")
    code = parse_qs(urlsplit(callback).query)["code"][0]
    exchange = requests.post(
        f"{sso.issuer}/token/",
        data={
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": f"{CONSOLE}/oidc/callback/",
            "client_id": CLIENT_ID,
            "client_secret": CLIENT_SECRET,
        },
        timeout=30,
    )
    assert exchange.status_code == 400
    assert exchange.json()["error"] in {"invalid_request", "invalid_grant"}


def test_an_answer_the_provider_refused_is_a_clear_page(client, sso, browser):
    sso.add_user("pete", "pw-pete-1", ["beeos-support"])
    authorize = start(client)
    refused = sso.sign_in(browser, with_query(authorize, code_challenge=None), "pete", "pw-pete-1")

    answer = back_to_console(client, refused)

    assert answer.status_code == 403
    assert b"did not sign you in (invalid_request)" in answer.content
    assert client.get("/tasks/").status_code == 302


def test_a_state_mismatch_is_a_clear_400(client, sso, browser):
    sso.add_user("sara", "pw-sara-1", ["beeos-support"])
    callback = sso.sign_in(browser, start(client), "sara", "pw-sara-1")

    forged = back_to_console(client, with_query(callback, state="not-the-state"))
    assert forged.status_code == 400
    assert b"does not belong to a sign-in started in this browser" in forged.content
    incomplete = client.get("/oidc/callback/")
    assert incomplete.status_code == 400

    # The real answer still works once; replayed, it is refused like a forged one.
    assert back_to_console(client, callback).status_code == 302
    client.post("/logout/")
    assert back_to_console(client, callback).status_code == 400
    # In another browser (no sign-in started there), the answer is refused too.
    other = type(client)()
    assert back_to_console(other, callback).status_code == 400
    reasons = [e.reason for e in AuditEntry.objects.filter(action="login.failed")]
    assert sum(r.startswith("state mismatch") for r in reasons) == 3


def test_a_nonce_mismatch_is_a_clear_400(client, sso, browser):
    sub = sso.add_user("nina", "pw-nina-1", ["beeos-support"])
    authorize = with_query(start(client), nonce="a-nonce-the-console-never-sent")
    callback = sso.sign_in(browser, authorize, "nina", "pw-nina-1")

    answer = back_to_console(client, callback)

    assert answer.status_code == 400
    assert b"could not be verified" in answer.content
    assert not get_user_model().objects.filter(username=sub).exists()
    [failed] = AuditEntry.objects.filter(action="login.failed")
    assert "Nonce" in failed.reason and failed.detail["method"] == "sso"


def test_an_unreachable_provider_is_a_clear_page(client, settings, provider):
    configure_console(settings, provider)
    settings.OIDC_OP_ISSUER = "http://127.0.0.1:9/nothing-listens-here"
    answer = client.get("/oidc/authenticate/")
    assert answer.status_code == 502
    assert b"could not be reached" in answer.content


# --- logout ---------------------------------------------------------------------------


def test_logout_ends_the_provider_session_too(client, sso, browser):
    sub = sso.add_user("lola", "pw-lola-1", ["beeos-support"])
    sign_in(client, sso, browser, "lola", "pw-lola-1")
    assert sso.sessions("lola") == 1

    answer = client.post("/logout/")

    assert answer.status_code == 302
    end_session = urlsplit(answer["Location"])
    assert f"{end_session.scheme}://{end_session.netloc}{end_session.path}" == (
        f"{sso.issuer}/logout/"
    )
    query = parse_qs(end_session.query)
    assert query["post_logout_redirect_uri"] == [f"{CONSOLE}/login/"]
    assert query["client_id"] == [CLIENT_ID] and query["id_token_hint"][0].count(".") == 2
    assert client.get("/tasks/").status_code == 302  # the console session is gone
    # The browser follows: the provider ends its session and sends it back.
    back = browser.get(answer["Location"], allow_redirects=False)
    assert back.status_code == 302 and back.headers["Location"] == f"{CONSOLE}/login/"
    assert sso.sessions("lola") == 0
    [logout] = entries("logout", sub)
    assert logout.detail["method"] == "sso" and logout.detail["provider_logout"] is True
    # Signing in again asks for the password again (the provider's login form).
    again = browser.get(start(client), allow_redirects=False)
    assert urlsplit(again.headers["Location"]).path == "/accounts/login/"


def test_password_logout_stays_local(client, sso, support_user):
    client.post("/login/", {"username": "sam-support", "password": "pw-sam-support"})
    answer = client.post("/logout/")
    assert answer.status_code == 302 and answer["Location"] == "/login/"
    [logout] = entries("logout", "sam-support")
    assert logout.detail == {**logout.detail, "method": "password", "provider_logout": False}


# --- password login on and off ---------------------------------------------------------


def test_login_page_offers_both_while_passwords_are_on(client, sso, support_user):
    page = client.get("/login/?next=/tasks/")
    assert b"Sign in with Test IdP" in page.content
    assert b'href="/oidc/authenticate/?next=/tasks/"' in page.content
    assert b'name="password"' in page.content
    answer = client.post("/login/", {"username": "sam-support", "password": "pw-sam-support"})
    assert answer.status_code == 302
    [login] = entries("login.succeeded", "sam-support")
    assert login.detail["method"] == "password"


def test_password_login_switched_off(client, settings, sso, support_user, browser):
    configure_console(settings, sso, password_login=False)

    page = client.get("/login/")
    assert b"Sign in with Test IdP" in page.content
    assert b'name="password"' not in page.content

    refused = client.post("/login/", {"username": "sam-support", "password": "pw-sam-support"})
    assert refused.status_code == 403
    assert b"Password login is switched off" in refused.content
    assert client.get("/tasks/").status_code == 302
    [failed] = entries("login.failed", "sam-support")
    assert "switched off" in failed.reason
    # The admin's password form is not a way around it.
    admin = client.get("/admin/login/?next=/admin/")
    assert admin.status_code == 302 and admin["Location"].startswith("/login/?next=")
    password_post = client.post("/admin/login/", {"username": "sam-support", "password": "x"})
    assert password_post.status_code == 302
    assert client.get("/admin/").status_code == 302

    # API tokens are unaffected.
    _, key = tokens.issue(support_user, "script")
    api = APIClient().get("/api/v1/tasks/", HTTP_AUTHORIZATION=f"Bearer {key}")
    assert api.status_code == 200

    # Single sign-on still works.
    sub = sso.add_user("otto", "pw-otto-1", ["beeos-support"])
    assert sign_in(client, sso, browser, "otto", "pw-otto-1").status_code == 302
    assert client.get("/tasks/").status_code == 200
    assert console_roles(sub) == {"support"}


def test_sso_is_off_unless_configured(client):
    assert client.get("/oidc/authenticate/").status_code == 404
    assert client.get("/oidc/callback/?code=x&state=y").status_code == 404
    page = client.get("/login/")
    assert b"Sign in with" not in page.content and b'name="password"' in page.content


# --- settings from the environment -------------------------------------------------------

SSO_ENV = {
    "OIDC_RP_CLIENT_ID": "beeos-console",
    "OIDC_RP_CLIENT_SECRET": "s3cret",
    "OIDC_OP_ISSUER": "https://login.example.com/realms/beeos",
    "OIDC_ROLE_MAP": "beeos-support=support,beeos-ops=operator,beeos-admins=admin",
}


def run_python(code: str, **env: str) -> subprocess.CompletedProcess:
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("OIDC_", "CONSOLE_"))}
    environ.update(env)
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env=environ,
        capture_output=True,
        text=True,
        timeout=120,
    )


def settings_of(**env: str) -> subprocess.CompletedProcess:
    code = (
        "import beeos_console.settings as s; print(s.AUTHENTICATION_BACKENDS); "
        "print(s.CONTENT_SECURITY_POLICY['DIRECTIVES']['form-action']); "
        "print(sorted(s.OIDC_ROLE_MAP.items())); print(s.OIDC_USE_PKCE)"
    )
    return run_python(code, **env)


def test_settings_come_from_the_environment():
    """The values tests/oidc_provider/harness.configure_console sets come from here."""
    on = settings_of(**SSO_ENV)
    assert on.returncode == 0, on.stderr
    backends, form_action, role_map, pkce = on.stdout.strip().splitlines()
    assert backends == str(
        [
            "axes.backends.AxesStandaloneBackend",
            "beeos_console.accounts.backends.ConsoleModelBackend",
            "beeos_console.accounts.oidc.ConsoleOIDCBackend",
        ]
    )
    assert form_action == str(["'self'", "https://login.example.com"])
    assert role_map == str(
        [("beeos-admins", "admin"), ("beeos-ops", "operator"), ("beeos-support", "support")]
    )
    assert pkce == "True"

    off = settings_of(**SSO_ENV, CONSOLE_PASSWORD_LOGIN="0")
    assert off.returncode == 0, off.stderr
    assert "beeos_console.accounts.backends.PasswordLoginOffBackend" in off.stdout
    assert "ConsoleModelBackend" not in off.stdout

    default = settings_of()
    assert "ConsoleOIDCBackend" not in default.stdout


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"CONSOLE_PASSWORD_LOGIN": "0"}, "CONSOLE_PASSWORD_LOGIN=0 needs single sign-on"),
        ({**SSO_ENV, "OIDC_ROLE_MAP": "beeos-x=feeder"}, "OIDC_ROLE_MAP"),
        ({**SSO_ENV, "OIDC_ROLE_MAP": "beeos-x"}, "OIDC_ROLE_MAP"),
        ({**SSO_ENV, "OIDC_RP_CLIENT_SECRET": ""}, "OIDC_RP_CLIENT_SECRET must be set"),
        ({**SSO_ENV, "OIDC_OP_ISSUER": ""}, "needs OIDC_OP_ISSUER"),
    ],
)
def test_bad_sso_settings_are_refused_at_start(env, message):
    result = settings_of(**env)
    assert result.returncode != 0
    assert message in result.stderr


def check_deploy(**env: str) -> subprocess.CompletedProcess:
    return run_python(
        "import os; from django.core.management import execute_from_command_line; "
        "os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'beeos_console.settings'); "
        "execute_from_command_line(['manage.py', 'check', '--deploy', '--fail-level', "
        "'WARNING'])",
        **env,
        DEBUG="0",
        SECRET_KEY="x7#Kq2!mZr9$Lp4@Wt8^Bv3&Nc6*Hd1(Fg5)Js0-Ye2+Ua7=Oi4",
        ALLOWED_HOSTS="console.example.com",
    )


def test_check_deploy_stays_clean_with_sso():
    result = check_deploy(**SSO_ENV, CONSOLE_PASSWORD_LOGIN="0")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout

    plain = check_deploy(**{**SSO_ENV, "OIDC_OP_ISSUER": "http://login.example.com/realms/b"})
    assert plain.returncode != 0
    assert "console_accounts.W001" in plain.stderr and "OIDC_OP_ISSUER" in plain.stderr
