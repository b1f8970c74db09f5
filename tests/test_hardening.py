"""Issue #13 (harden): login throttling, API token expiry, idle sessions, no open
redirects, bounded database waits, security headers. PostgreSQL, no mocks."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from datetime import timedelta
from io import StringIO
from pathlib import Path

import pytest
from axes.models import AccessAttempt
from django.conf import settings
from django.contrib.sessions.models import Session
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from rest_framework.test import APIClient

from beeos_console.auditlog.models import AuditEntry
from beeos_console.core import tokens
from beeos_console.core.middleware import LAST_SEEN_KEY
from beeos_console.core.models import ApiToken
from beeos_console.core.views import check_database, probe_conninfo

from .factories import make_task

pytestmark = pytest.mark.django_db
ROOT = Path(__file__).resolve().parents[1]
FOREIGN = "https://evil.example.com/phish"


def settings_value(expression: str, **env: str) -> str:
    """A setting as the project computes it from this environment: its settings module,
    imported in a fresh process (what Django reads; nothing else needs to start)."""
    code = f"import beeos_console.settings as settings; print({expression})"
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


# --- 4. logins are throttled -----------------------------------------------------------


def fail_login(client, username: str = "olga-operator"):
    return client.post("/login/", {"username": username, "password": "not-the-password"})


def test_a_username_is_locked_out_after_the_limit_and_an_admin_unlocks_it(
    client, operator_user, admin_user
):
    limit = settings.CONSOLE_LOGIN_FAILURE_LIMIT
    for _ in range(limit - 1):
        answer = fail_login(client)
        assert answer.status_code == 200 and b"didn't match" in answer.content
    locked = fail_login(client)
    assert locked.status_code == 429
    assert b"Too many failed logins" in locked.content
    assert b"olga-operator" in locked.content
    # Even the right password is refused now, without being checked.
    right = client.post("/login/", {"username": "olga-operator", "password": "pw-olga-operator"})
    assert right.status_code == 429
    assert "_auth_user_id" not in client.session
    # Another username from the same address is not locked.
    assert fail_login(client, "sam-support").status_code == 200

    failed = AuditEntry.objects.filter(action="login.failed", actor="olga-operator")
    assert failed.count() == limit + 1  # every failure, the refused right password too
    assert all(e.actor_kind == "user" and e.object_id == "olga-operator" for e in failed)
    assert failed.filter(detail__locked_out=True).count() == 2
    lockout = AuditEntry.objects.get(action="login.locked_out")
    assert (lockout.actor, lockout.detail["failures"]) == ("olga-operator", limit)
    assert lockout.detail["ip_address"] == "127.0.0.1"

    # The admin's console page lists the lockout, with an Unlock button.
    admin = type(client)()
    admin.force_login(admin_user)
    page = admin.get("/audit/lockouts/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "olga-operator" in html and "127.0.0.1" in html and ">Unlock</button>" in html
    assert '<a href="/audit/lockouts/"' in html  # in the admins' nav
    attempt = AccessAttempt.objects.get(username="olga-operator")
    answer = admin.post(f"/audit/lockouts/{attempt.pk}/unlock/")
    assert answer.status_code == 302
    assert not AccessAttempt.objects.filter(username="olga-operator").exists()
    unlocked = AuditEntry.objects.get(action="login.unlocked")
    assert (unlocked.actor, unlocked.object_id) == ("ada-admin", "olga-operator")
    assert unlocked.detail["failures"] == limit
    assert "Nobody is locked out" in admin.get("/audit/lockouts/").content.decode()

    # Unlocked: the right password works again, and that is audited too.
    right = client.post("/login/", {"username": "olga-operator", "password": "pw-olga-operator"})
    assert right.status_code == 302
    assert AuditEntry.objects.filter(action="login.succeeded", actor="olga-operator").exists()


def test_only_admins_see_and_use_the_lockout_page(client, operator_user):
    for _ in range(settings.CONSOLE_LOGIN_FAILURE_LIMIT):
        fail_login(client, "someone")
    attempt = AccessAttempt.objects.get(username="someone")
    client.force_login(operator_user)
    assert client.get("/audit/lockouts/").status_code == 403
    assert client.post(f"/audit/lockouts/{attempt.pk}/unlock/").status_code == 403
    assert AccessAttempt.objects.filter(pk=attempt.pk).exists()
    assert not AuditEntry.objects.filter(action="login.unlocked").exists()


def test_login_limits_come_from_the_environment():
    assert (
        settings_value(
            "(settings.AXES_FAILURE_LIMIT, settings.AXES_COOLOFF_TIME.total_seconds())",
            CONSOLE_LOGIN_FAILURE_LIMIT="7",
            CONSOLE_LOGIN_COOLOFF_MINUTES="45",
        )
        == "(7, 2700.0)"
    )


# --- 4. API tokens expire and show when they were last used -----------------------------


def api_with(key: str) -> APIClient:
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    return api


def test_an_expired_token_gets_401_saying_so(support_user):
    token, key = tokens.issue(support_user, "old")
    lifetime = token.expires_at - token.created_at
    assert abs(lifetime - timedelta(days=settings.CONSOLE_API_TOKEN_DAYS)) < timedelta(seconds=5)
    assert api_with(key).get("/api/v1/tasks/").status_code == 200
    ApiToken.objects.filter(pk=token.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    answer = api_with(key).get("/api/v1/tasks/")
    assert answer.status_code == 401
    body = answer.json()
    assert body["code"] == "token_expired" and "expired" in body["detail"]
    assert answer["WWW-Authenticate"].startswith("Bearer")


def test_last_used_is_recorded_at_most_once_a_minute(support_user):
    token, key = tokens.issue(support_user, "sync")
    assert token.last_used_at is None
    api = api_with(key)
    api.get("/api/v1/tasks/")
    token.refresh_from_db()
    first = token.last_used_at
    assert first is not None and timezone.now() - first < timedelta(seconds=30)
    with CaptureQueriesContext(connection) as ctx:
        api.get("/api/v1/tasks/")
    assert not [
        q for q in ctx.captured_queries if "console_apitoken" in q["sql"] and "UPDATE" in q["sql"]
    ]
    token.refresh_from_db()
    assert token.last_used_at == first
    # A minute later the next use moves it.
    ApiToken.objects.filter(pk=token.pk).update(last_used_at=first - timedelta(minutes=2))
    api.get("/api/v1/tasks/")
    token.refresh_from_db()
    assert token.last_used_at > first - timedelta(minutes=2) + timedelta(seconds=60)


def test_admins_see_expiry_and_last_use(admin_user, client):
    token, key = tokens.issue(admin_user, "nightly")
    api_with(key).get("/api/v1/tasks/")
    client.force_login(admin_user)
    page = client.get("/admin/console/apitoken/").content.decode()
    assert "Expires at" in page and "Last used at" in page
    token.refresh_from_db()
    assert token.last_used_at is not None


def test_create_api_token_prints_the_expiry(support_user):
    out, err = StringIO(), StringIO()
    call_command("create_api_token", "sam-support", stdout=out, stderr=err)
    token = ApiToken.objects.get(user=support_user)
    assert f"expires {token.expires_at.isoformat(timespec='seconds')}" in err.getvalue()
    assert (token.expires_at - timezone.now()).days in {
        settings.CONSOLE_API_TOKEN_DAYS - 1,
        settings.CONSOLE_API_TOKEN_DAYS,
    }
    call_command("create_api_token", "sam-support", "--days", "3", stdout=out, stderr=err)
    short = ApiToken.objects.filter(user=support_user).latest("pk")
    assert (short.expires_at - timezone.now()).days in {2, 3}


def test_token_lifetime_comes_from_the_environment():
    assert settings_value("settings.CONSOLE_API_TOKEN_DAYS", CONSOLE_API_TOKEN_DAYS="14") == "14"


# --- 4. idle sessions end -----------------------------------------------------------------


def set_last_seen(client, seconds_ago: int) -> None:
    session = client.session
    session[LAST_SEEN_KEY] = int(time.time()) - seconds_ago
    session.save()


def test_an_idle_session_is_logged_out(client, support_user):
    client.force_login(support_user)
    assert client.get("/tasks/").status_code == 200
    set_last_seen(client, settings.CONSOLE_SESSION_IDLE_MINUTES * 60 + 5)
    answer = client.get("/tasks/")
    assert answer.status_code == 302 and answer["Location"].startswith("/login/")
    assert "_auth_user_id" not in client.session


def test_an_active_session_moves_its_expiry_at_most_once_a_minute(client, support_user):
    client.force_login(support_user)
    key = client.session.session_key
    # Fresh from the login: no session write on the next page.
    with CaptureQueriesContext(connection) as ctx:
        assert client.get("/tasks/").status_code == 200
    assert not [
        q for q in ctx.captured_queries if "django_session" in q["sql"] and "UPDATE" in q["sql"]
    ]
    # Two minutes later: the expiry moves forward to a full idle period from now.
    set_last_seen(client, 120)
    Session.objects.filter(pk=key).update(expire_date=timezone.now() + timedelta(minutes=5))
    assert client.get("/tasks/").status_code == 200
    expiry = Session.objects.get(pk=key).expire_date
    idle = timedelta(minutes=settings.CONSOLE_SESSION_IDLE_MINUTES)
    assert expiry > timezone.now() + idle - timedelta(seconds=30)


def test_auto_refresh_polls_do_not_keep_a_session_alive(client, support_user):
    client.force_login(support_user)
    set_last_seen(client, 120)
    before = client.session[LAST_SEEN_KEY]
    assert client.get("/tasks/", HTTP_HX_REQUEST="true", HTTP_X_CONSOLE_POLL="1").status_code == 200
    assert client.session[LAST_SEEN_KEY] == before
    set_last_seen(client, settings.CONSOLE_SESSION_IDLE_MINUTES * 60 + 5)
    polled = client.get("/tasks/", HTTP_HX_REQUEST="true", HTTP_X_CONSOLE_POLL="1")
    assert polled.status_code == 302
    assert "_auth_user_id" not in client.session


def test_idle_time_comes_from_the_environment():
    assert settings_value("settings.SESSION_COOKIE_AGE", CONSOLE_SESSION_IDLE_MINUTES="7") == "420"
    assert settings_value("settings.SESSION_COOKIE_AGE") == str(30 * 60)


# --- 6. no open redirects -----------------------------------------------------------------


def assert_stays_here(answer) -> None:
    location = answer.get("Location", "")
    assert "evil.example.com" not in location, location
    assert "evil.example.com" not in answer.content.decode(errors="replace")


@pytest.mark.parametrize("target", [FOREIGN, "//evil.example.com/x", "javascript:alert(1)"])
def test_login_and_logout_refuse_a_foreign_next(client, support_user, target):
    page = client.get("/login/", {"next": target})
    assert_stays_here(page)
    answer = client.post(
        f"/login/?next={target}", {"username": "sam-support", "password": "pw-sam-support"}
    )
    assert answer.status_code == 302 and answer["Location"] == "/"
    assert_stays_here(client.post("/logout/", {"next": target}))


def test_login_follows_a_local_next(client, support_user):
    answer = client.post(
        "/login/?next=/tasks/", {"username": "sam-support", "password": "pw-sam-support"}
    )
    assert answer["Location"] == "/tasks/"


@pytest.mark.parametrize("target", [FOREIGN, "//evil.example.com/x", "javascript:alert(1)"])
def test_reproject_refuses_a_foreign_next(client, admin_user, target):
    task = make_task("running")
    client.force_login(admin_user)
    url = f"/audit/projections/reproject/task/{task.pk}/"
    page = client.get(url, {"next": target})
    assert page.status_code == 200
    assert_stays_here(page)
    answer = client.post(url, {"next": target})
    assert answer.status_code == 302
    assert answer["Location"] == "/audit/projections/"
    assert client.post(url, {"next": "/tasks/"})["Location"] == "/tasks/"


def test_cancel_and_bulk_pages_never_follow_a_foreign_next(client, operator_user):
    task = make_task("running")
    client.force_login(operator_user)
    cancel = client.post(
        f"/tasks/{task.task_id}/cancel/?protocol={task.protocol}&next={FOREIGN}",
        {"protocol": task.protocol, "reason": "stuck", "next": FOREIGN},
    )
    assert_stays_here(cancel)
    bulk = client.get("/bulk/task/cancel/", {"next": FOREIGN, "scope": "all", "query": ""})
    assert_stays_here(bulk)


# --- 9. bounded waits -----------------------------------------------------------------


@pytest.fixture
def silent_server() -> Iterator[tuple[str, int]]:
    """A TCP listener that accepts connections and never says a word."""
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            accepted.append(conn)  # held open, never answered

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield server.getsockname()
    stop.set()
    thread.join(2)
    for conn in accepted:
        conn.close()
    server.close()


def test_readiness_gives_up_within_two_seconds_on_a_silent_database(silent_server):
    host, port = silent_server
    params = {**probe_conninfo(), "host": host, "port": port, "connect_timeout": 30}
    started = time.monotonic()
    ready, error = check_database(params)
    elapsed = time.monotonic() - started
    assert not ready and error == "Timeout"
    assert elapsed < 2.0, elapsed
    started = time.monotonic()
    ready, _ = check_database(f"host={host} port={port} dbname=x user=postgres connect_timeout=30")
    assert not ready and time.monotonic() - started < 2.0


def test_readyz_answers_ok_on_a_healthy_database(client):
    started = time.monotonic()
    answer = client.get("/readyz")
    assert answer.status_code == 200 and answer.json()["status"] == "ok"
    assert time.monotonic() - started < 2.0


def test_database_timeouts_are_configured():
    options = connection.settings_dict["OPTIONS"]
    assert options["connect_timeout"] == settings.DATABASE_CONNECT_TIMEOUT == 5
    assert f"statement_timeout={settings.DATABASE_STATEMENT_TIMEOUT * 1000}" in options["options"]
    with connection.cursor() as cursor:
        cursor.execute("SHOW statement_timeout")
        assert cursor.fetchone()[0] == "30s"
    assert (
        settings_value(
            "settings.DATABASES['default']['OPTIONS']",
            DATABASE_CONNECT_TIMEOUT="2",
            DATABASE_STATEMENT_TIMEOUT="9",
            DATABASE_URL="postgres://u@db.example.com:5432/c?options=-c%20search_path%3Dx",
        )
        == "{'options': '-c search_path=x -c statement_timeout=9000', 'connect_timeout': 2}"
    )


# --- 10. headers and exposure ------------------------------------------------------------


def test_pages_carry_csp_permissions_policy_and_no_store(client, support_user):
    login_page = client.get("/login/")
    csp = login_page["Content-Security-Policy"]
    assert "script-src 'self'" in csp and "unsafe-inline" not in csp
    assert "camera=()" in login_page["Permissions-Policy"]
    client.force_login(support_user)
    for url in ("/", "/tasks/", "/operations/", "/messages/"):
        answer = client.get(url)
        assert answer.status_code == 200, url
        assert "script-src 'self'" in answer["Content-Security-Policy"], url
        assert "Permissions-Policy" in answer, url
        assert "no-store" in answer["Cache-Control"], url


def test_api_answers_to_a_token_are_not_stored(support_user):
    _, key = tokens.issue(support_user)
    answer = api_with(key).get("/api/v1/tasks/")
    assert "no-store" in answer["Cache-Control"]


def test_schema_and_docs_need_a_login(client, support_user):
    assert client.get("/api/schema/").status_code in {401, 403}
    docs = client.get("/api/docs/")
    assert docs.status_code == 302 and docs["Location"].startswith("/login/")
    client.force_login(support_user)
    assert client.get("/api/schema/").status_code == 200
    page = client.get("/api/docs/")
    assert page.status_code == 200
    # The Swagger UI start-up script is a file, not inline (CSP).
    assert "<script>" not in page.content.decode().replace(" ", "")
    assert client.get("/api/docs/?script=").status_code == 200


def test_templates_have_no_inline_scripts_or_handlers():
    owned = [
        p
        for p in (ROOT / "templates").rglob("*.html")
        if p.name not in {"list.html", "dashboard.html", "_rows.html"}
    ]
    inline_script = re.compile(r"<script(?![^>]*\bsrc=)[^>]*>", re.I)
    handler = re.compile(r"\son[a-z]+\s*=", re.I)
    for path in owned:
        text = path.read_text()
        assert not inline_script.search(text), path
        assert not handler.search(text), path
