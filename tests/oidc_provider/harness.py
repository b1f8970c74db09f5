"""Run the test identity provider as its own process and drive it, and point the
console at it (the settings ``beeos_console/settings.py`` derives from OIDC_* env)."""

from __future__ import annotations

import copy
import json
import os
import select
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urljoin, urlsplit

import psycopg
import requests
from psycopg import sql

ROOT = Path(__file__).resolve().parents[2]
START_TIMEOUT = 90  # seconds: migrating a fresh database on a busy machine

CLIENT_ID = "beeos-console"
CLIENT_SECRET = "console-test-secret-5f2b9c0e7d1a4e6b"
PROVIDER_NAME = "Test IdP"
ROLE_MAP = {"beeos-support": "support", "beeos-ops": "operator", "beeos-admins": "admin"}
SSO_BACKEND = "beeos_console.accounts.oidc.ConsoleOIDCBackend"


@dataclass
class Provider:
    """The running provider: its URL and its test-only control endpoints."""

    url: str
    control_token: str
    log_path: Path

    @property
    def issuer(self) -> str:
        return f"{self.url}/o"

    def _control(self, method: str, path: str, payload: Any = None) -> dict[str, Any]:
        answer = requests.request(
            method,
            f"{self.url}/_test/{path}",
            json=payload,
            headers={"X-Test-Token": self.control_token},
            timeout=30,
        )
        answer.raise_for_status()
        return answer.json()

    def add_user(self, username: str, password: str, groups: list[str], **profile: str) -> str:
        """Create or update a provider user; returns its ``sub``."""
        payload = {"username": username, "password": password, "groups": groups, **profile}
        return self._control("POST", "users", payload)["sub"]

    def set_groups(self, username: str, groups: list[str]) -> None:
        self._control("POST", "users", {"username": username, "groups": groups})

    def register_client(self, console_url: str) -> None:
        """The console as a confidential client: its callback and login page registered."""
        self._control(
            "POST",
            "clients",
            {
                "client_id": CLIENT_ID,
                "client_secret": CLIENT_SECRET,
                "redirect_uris": [f"{console_url}/oidc/callback/"],
                "post_logout_redirect_uris": [f"{console_url}/login/"],
            },
        )

    def sessions(self, username: str) -> int:
        """How many live provider sessions the user has."""
        return self._control("GET", f"sessions/{username}")["sessions"]

    def sign_in(
        self, browser: requests.Session, authorize_url: str, username: str, password: str
    ) -> str:
        """Follow an authorize URL like a browser, through the provider's login form
        when its session does not know the user yet; returns the redirect back to the
        client (its callback, with ``code`` and ``state``, or ``error``)."""
        answer = browser.get(authorize_url, allow_redirects=False)
        location = answer.headers.get("Location", "")
        if answer.status_code == 302 and urlsplit(location).path == "/accounts/login/":
            login_url = urljoin(self.url, location)
            browser.get(login_url).raise_for_status()
            answer = browser.post(
                f"{self.url}/accounts/login/",
                data={
                    "username": username,
                    "password": password,
                    "next": parse_qs(urlsplit(login_url).query)["next"][0],
                    "csrfmiddlewaretoken": browser.cookies["idp_csrftoken"],
                },
                allow_redirects=False,
            )
            assert answer.status_code == 302, f"provider login failed: {answer.status_code}"
            answer = browser.get(
                urljoin(self.url, answer.headers["Location"]), allow_redirects=False
            )
        assert answer.status_code == 302, f"authorize answered {answer.status_code}"
        return answer.headers["Location"]


def provider_database(console: dict[str, Any]) -> dict[str, Any]:
    """The provider's own database on the console's PostgreSQL server:
    ``<console database>_idp`` (``beeos_sso`` -> ``beeos_sso_idp``)."""
    name = console["NAME"].removeprefix("test_")
    return {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": f"{name}_idp",
        "HOST": console.get("HOST", ""),
        "PORT": str(console.get("PORT", "") or ""),
        "USER": console.get("USER", ""),
        "PASSWORD": console.get("PASSWORD", ""),
    }


def _server(database: dict[str, Any]) -> psycopg.Connection:
    return psycopg.connect(
        dbname="postgres",
        host=database["HOST"] or None,
        port=database["PORT"] or None,
        user=database["USER"] or None,
        password=database["PASSWORD"] or None,
        autocommit=True,
    )


def _recreate(database: dict[str, Any], *, create: bool) -> None:
    name = sql.Identifier(database["NAME"])
    with _server(database) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(name))
        if create:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(name))


@contextmanager
def running_provider(console_database: dict[str, Any]) -> Iterator[Provider]:
    """Start the provider on a free 127.0.0.1 port with a fresh database; stop it and
    drop the database afterwards."""
    database = provider_database(console_database)
    _recreate(database, create=True)
    token = os.urandom(16).hex()
    env = {k: v for k, v in os.environ.items() if k not in {"DJANGO_SETTINGS_MODULE"}}
    env.update(IDP_DATABASE=json.dumps(database), IDP_CONTROL_TOKEN=token)
    with tempfile.NamedTemporaryFile(prefix="oidc-provider-", suffix=".log") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "tests.oidc_provider.serve"],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=log,
            text=True,
        )
        try:
            url = _wait_ready(process, Path(log.name))
            yield Provider(url=url, control_token=token, log_path=Path(log.name))
        finally:
            process.terminate()
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            _recreate(database, create=False)


def _wait_ready(process: subprocess.Popen, log_path: Path) -> str:
    deadline = time.monotonic() + START_TIMEOUT
    assert process.stdout is not None
    while time.monotonic() < deadline:
        ready, _, _ = select.select([process.stdout], [], [], 0.5)
        if ready:
            line = process.stdout.readline()
            if line.startswith("IDP READY "):
                return line.split()[-1]
        if process.poll() is not None:
            break
    raise RuntimeError(f"the test identity provider did not start:\n{log_path.read_text()[-4000:]}")


def configure_console(settings: Any, provider: Provider, *, password_login: bool = True) -> None:
    """What ``beeos_console/settings.py`` sets from OIDC_RP_CLIENT_ID, OIDC_RP_CLIENT_SECRET,
    OIDC_OP_ISSUER, OIDC_PROVIDER_NAME, OIDC_ROLE_MAP and CONSOLE_PASSWORD_LOGIN (the
    settings test checks the same values come from the environment)."""
    settings.OIDC_RP_CLIENT_ID = CLIENT_ID
    settings.OIDC_RP_CLIENT_SECRET = CLIENT_SECRET
    settings.OIDC_OP_ISSUER = provider.issuer
    settings.OIDC_PROVIDER_NAME = PROVIDER_NAME
    settings.OIDC_ROLE_MAP = dict(ROLE_MAP)
    settings.CONSOLE_PASSWORD_LOGIN = password_login
    password_backend = (
        "beeos_console.accounts.backends.ConsoleModelBackend"
        if password_login
        else "beeos_console.accounts.backends.PasswordLoginOffBackend"
    )
    settings.AUTHENTICATION_BACKENDS = [
        "axes.backends.AxesStandaloneBackend",
        password_backend,
        SSO_BACKEND,
    ]
    csp = copy.deepcopy(settings.CONTENT_SECURITY_POLICY)
    csp["DIRECTIVES"]["form-action"].append(provider.url)
    settings.CONTENT_SECURITY_POLICY = csp
