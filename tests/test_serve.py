"""`make serve`, end to end: gunicorn and the worker with production settings.

The database (one of its own on the suite's PostgreSQL) is set up with the README's
"Database roles" commands and its first admin with the README's command; then `make
serve` runs on a free port as the app's role, behind a pretend TLS proxy
(``X-Forwarded-Proto: https`` from an address in FORWARDED_ALLOW_IPS). The tests check
what an operator sees: /readyz, a login and a page, a static file under its hashed
name, the JSON log line of a request, and a SIGTERM during which a request and a job
in flight both finish before everything exits 0.

The request and the job are made slow without any hook in the console: the test holds
a lock on the tasks table, which both need, and releases it after the SIGTERM.
"""

from __future__ import annotations

import gzip
import hashlib
import hmac
import http.client
import json
import os
import re
import secrets
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.cookies import SimpleCookie
from pathlib import Path
from urllib.parse import urlencode, urlsplit, urlunsplit

import psycopg
import pytest

from beeos_console.auditlog.management.commands.grant_app_role import conninfo_of, role_url

from .ports import free_port

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
BIN = Path(sys.executable).parent
VENV = BIN.parent
# Generous: it bounds a wait, it does not time anything (a loaded CI box is slow).
PATIENCE = 240.0
APP_ROLE = "console_app"
ADMIN = "ada"
WEBHOOK = "/api/v1/webhooks/beeos/"
WEBHOOK_SECRET = "whsec_serve_" + "w" * 40


def wait_for(what: str, check: Callable[[], object], timeout: float = PATIENCE) -> object:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = check()
        if result:
            return result
        time.sleep(0.2)
    raise AssertionError(f"gave up waiting for {what}")


def readme_blocks(heading: str) -> list[str]:
    """The ```sh blocks of a README section, up to its next heading."""
    section = re.split(r"\n#{2,3} ", README.split(f"\n{heading}\n", 1)[1], maxsplit=1)[0]
    return re.findall(r"```sh\n(.*?)```", section, flags=re.DOTALL)


def runnable(commands: str) -> str:
    """README commands, with the README's `.venv/bin/` pointing at this interpreter's."""
    return commands.replace(".venv/bin/", f"{BIN}/")


def base_env(**extra: str) -> dict[str, str]:
    environ = {
        key: value
        for key, value in os.environ.items()
        if key not in {"DEBUG", "SECRET_KEY", "ALLOWED_HOSTS", "MAKEFLAGS", "MAKELEVEL", "MFLAGS"}
    }
    environ.update(extra)
    return environ


def make_serve(env: dict[str, str], **popen: object) -> subprocess.Popen:
    # -o: the venv running this test is installed already; never pip-install from here.
    command = ["make", "-s", f"VENV={VENV}", "-o", f"{VENV}/.installed", "serve"]
    return subprocess.Popen(command, cwd=ROOT, env=env, **popen)  # type: ignore[call-overload]


# --- refusing to start ------------------------------------------------------


@pytest.mark.parametrize("missing", ["SECRET_KEY", "ALLOWED_HOSTS"])
def test_serve_refuses_to_start_without_secret_key_or_allowed_hosts(missing):
    env = base_env(SECRET_KEY="k" * 50, ALLOWED_HOSTS="console.example.com")
    del env[missing]
    result = make_serve(env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    stdout, stderr = result.communicate(timeout=60)
    assert result.returncode == 2
    assert "set SECRET_KEY and ALLOWED_HOSTS" in stderr
    assert stdout == ""  # nothing started: no migration, no server


def test_production_settings_refuse_an_empty_allowed_hosts():
    result = subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=ROOT,
        env=base_env(DEBUG="0", SECRET_KEY="k" * 50),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode != 0
    assert "ALLOWED_HOSTS must be set when DEBUG is off" in result.stderr


# --- the running server -------------------------------------------------------


@dataclass
class Response:
    status: int
    headers: http.client.HTTPMessage
    body: bytes

    @property
    def text(self) -> str:
        return self.body.decode()


@dataclass
class Browser:
    """Cookies and the headers a TLS-terminating proxy adds; just enough of a browser."""

    port: int
    cookies: dict[str, str] = field(default_factory=dict)

    @property
    def origin(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    def request(
        self, method: str, path: str, *, form: dict[str, str] | None = None, **headers: str
    ) -> Response:
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=PATIENCE)
        sent = {
            "X-Forwarded-Proto": "https",
            **{k.replace("_", "-"): v for k, v in headers.items()},
        }
        if self.cookies:
            sent["Cookie"] = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        body = None
        if form is not None:
            body = urlencode(form)
            sent["Content-Type"] = "application/x-www-form-urlencoded"
            sent["Origin"] = self.origin
            sent["Referer"] = self.origin + path
        try:
            connection.request(method, path, body=body, headers=sent)
            answer = connection.getresponse()
            response = Response(answer.status, answer.headers, answer.read())
        finally:
            connection.close()
        for header in response.headers.get_all("Set-Cookie") or []:
            for name, morsel in SimpleCookie(header).items():
                self.cookies[name] = morsel.value
        return response

    def log_in(self, username: str, password: str) -> None:
        page = self.request("GET", "/login/")
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)
        assert page.status == 200 and token, page.status
        done = self.request(
            "POST",
            "/login/",
            form={"csrfmiddlewaretoken": token[1], "username": username, "password": password},
        )
        assert done.status == 302, done.text[:500]


@dataclass
class Served:
    process: subprocess.Popen
    port: int
    static_root: Path
    owner_url: str
    output: list[str]
    admin_password: str

    def log_entries(self) -> list[dict]:
        return [json.loads(line) for line in list(self.output) if line.startswith("{")]

    def logged(self, what: str, match: Callable[[dict], bool]) -> dict:
        found = wait_for(what, lambda: next((e for e in self.log_entries() if match(e)), None))
        return found  # type: ignore[return-value]

    def sql(self, statement: str, *params: object) -> list[tuple]:
        with psycopg.connect(conninfo_of(self.owner_url), autocommit=True) as db:
            return db.execute(statement, params).fetchall()


def database_url(name: str) -> str:
    url = os.environ.get("DATABASE_URL", "")
    if not url:
        pytest.skip("needs DATABASE_URL (the suite's PostgreSQL)")
    return urlunsplit(urlsplit(url)._replace(path=f"/{name}"))


@pytest.fixture(scope="module")
def served(tmp_path_factory) -> Iterator[Served]:
    suite_name = urlsplit(os.environ.get("DATABASE_URL", "")).path.lstrip("/")
    # CREATE/DROP DATABASE from the maintenance database: the suite's own database
    # (DATABASE_URL's name) need not exist, pytest-django uses test_<name>.
    suite_url = database_url("postgres")
    # One per xdist worker, as pytest-django's own test database is.
    name = "_".join(
        filter(None, ["test", suite_name, "serve", os.environ.get("PYTEST_XDIST_WORKER")])
    )
    owner_url = database_url(name)
    with psycopg.connect(conninfo_of(suite_url), autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.execute(f'CREATE DATABASE "{name}"')
    # A password may begin with "-" (token_urlsafe gives one every 64 runs): the README's
    # commands must pass it whole, so this one always does.
    app_password = "-" + secrets.token_urlsafe(16)
    admin_password = secrets.token_urlsafe(16)
    static_root = tmp_path_factory.mktemp("static")
    port = free_port()
    env = base_env(
        SECRET_KEY=secrets.token_urlsafe(50),
        ALLOWED_HOSTS="127.0.0.1",
        DATABASE_MIGRATE_URL=owner_url,
        DATABASE_URL=role_url(owner_url, APP_ROLE, app_password),
        APP_DB_PASSWORD=app_password,
        DJANGO_SUPERUSER_PASSWORD=admin_password,
        STATIC_ROOT=str(static_root),
        HOST="127.0.0.1",
        PORT=str(port),
        WEB_CONCURRENCY="2",
        FORWARDED_ALLOW_IPS="127.0.0.1",
        GRACEFUL_TIMEOUT="120",
        # The SIGTERM test holds a lock for as long as a slow machine needs.
        DATABASE_STATEMENT_TIMEOUT="600",
        BEEOS_WEBHOOK_SECRET=WEBHOOK_SECRET,
        # Webhooks stay queued: the SIGTERM test counts the worker's jobs.
        WEBHOOK_NUDGE_SECONDS="0",
    )
    # The README's commands: the schema and the app's role, as the owner; the first admin.
    (roles,) = readme_blocks("### Database roles")
    subprocess.run(["bash", "-ec", runnable(roles)], cwd=ROOT, env=env, check=True, timeout=600)
    server_block, first_admin = readme_blocks("### Production server")
    assert f"createsuperuser --no-input --username {ADMIN}" in first_admin
    subprocess.run(
        ["bash", "-ec", runnable(first_admin)], cwd=ROOT, env=env, check=True, timeout=300
    )
    assert server_block.rstrip().endswith("make serve")  # what the fixture runs next

    process = make_serve(
        env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # its own session: found, and cleaned up, as a whole
    )
    output: list[str] = []
    reader = threading.Thread(target=lambda: output.extend(process.stdout), daemon=True)
    reader.start()
    served = Served(process, port, static_root, owner_url, output, admin_password)
    try:
        wait_for("/readyz", lambda: process.poll() is not None or ready(port))
        assert process.poll() is None, "".join(output)
        yield served
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        reader.join(timeout=10)
        print("make serve said:\n" + "".join(output))  # shown when a test failed
        with psycopg.connect(conninfo_of(suite_url), autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def ready(port: int) -> bool:
    try:
        return Browser(port).request("GET", "/readyz").status == 200
    except OSError:
        return False


@pytest.fixture(scope="module")
def admin(served) -> Browser:
    browser = Browser(served.port)
    browser.log_in(ADMIN, served.admin_password)
    return browser


def test_readyz_answers_over_plain_http_on_a_kept_alive_connection(served):
    """A load balancer's health check needs neither TLS nor a login, and it (like a
    webhook sender) reuses its connection."""
    connection = http.client.HTTPConnection("127.0.0.1", served.port, timeout=PATIENCE)
    connection.request("GET", "/readyz")
    answer = connection.getresponse()
    assert answer.status == 200
    assert json.loads(answer.read()) == {"status": "ok"}
    kept = connection.sock
    connection.request("GET", "/healthz")
    assert connection.getresponse().status == 200
    assert connection.sock is kept  # not closed after the first answer
    connection.close()


def test_the_first_admin_logs_in_and_loads_a_page(served, admin):
    page = admin.request("GET", "/")
    assert page.status == 200
    assert f'<span translate="no">{ADMIN}</span>' in page.text
    assert page.headers["Strict-Transport-Security"]  # production settings are on
    anonymous = Browser(served.port).request("GET", "/tasks/")
    assert anonymous.status == 302 and "/login/" in anonymous.headers["Location"]


def test_static_files_are_served_by_hashed_name_and_cached_for_good(served, admin):
    manifest = json.loads((served.static_root / "staticfiles.json").read_text())["paths"]
    hashed = manifest["css/console.css"]
    assert hashed != "css/console.css"
    page = admin.request("GET", "/")
    assert f"/static/{hashed}" in page.text  # pages link to the hashed name

    css = admin.request("GET", f"/static/{hashed}", Accept_Encoding="gzip")
    assert css.status == 200
    assert css.headers["Cache-Control"] == "max-age=315360000, public, immutable"
    assert css.headers["Content-Encoding"] == "gzip"
    assert gzip.decompress(css.body) == (served.static_root / hashed).read_bytes()
    assert admin.request("GET", "/static/css/console.0000000000aa.css").status == 404


def test_a_request_is_one_json_log_line_with_its_request_id(served, admin):
    request_id = f"lb-{uuid.uuid4().hex}"
    page = admin.request("GET", "/", X_Request_ID=request_id)
    assert page.status == 200
    assert page.headers["X-Request-ID"] == request_id
    line = served.logged("the request's log line", lambda e: e.get("request_id") == request_id)
    assert line["logger"] == "beeos_console.request"
    assert line["level"] == "INFO"
    assert (line["user"], line["view"], line["method"], line["path"], line["status"]) == (
        ADMIN,
        "dashboard",
        "GET",
        "/",
        200,
    )
    assert isinstance(line["duration_ms"], float) and line["duration_ms"] >= 0
    assert line["timestamp"].endswith("Z")

    forged = Browser(served.port).request("GET", "/readyz", X_Request_ID='x" "user": "mallory')
    generated = forged.headers["X-Request-ID"]
    assert re.fullmatch(r"[0-9a-f]{32}", generated)
    anonymous = served.logged("the forged one's line", lambda e: e.get("request_id") == generated)
    assert anonymous["user"] is None and anonymous["view"] == "readyz"


def signed_event(task_id: str, **extra: str) -> tuple[bytes, dict[str, str]]:
    """A task_status event and its X-BeeOS-Signature, as BeeOS sends them."""
    event = {
        "type": "task_status",
        "task_id": task_id,
        "status": "running",
        "timestamp": "2026-12-01T08:00:00Z",
        **extra,
    }
    body = json.dumps(event).encode()
    stamp = str(int(time.time()))
    mac = hmac.new(WEBHOOK_SECRET.encode(), stamp.encode() + b"." + body, hashlib.sha256)
    headers = {
        "Content-Type": "application/json",
        "X-BeeOS-Signature": f"t={stamp},v1={mac.hexdigest()}",
    }
    return body, headers


def post(port: int, body: bytes, headers: dict[str, str]) -> Response:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=PATIENCE)
    try:
        connection.request("POST", WEBHOOK, body=body, headers=headers)
        answer = connection.getresponse()
        return Response(answer.status, answer.headers, answer.read())
    finally:
        connection.close()


def test_a_webhook_is_acknowledged_with_its_request_id_and_log_line(served):
    """The receiver, answered before Django's handler, keeps what every request gets."""
    body, headers = signed_event("tsk_served_1")
    # Plain HTTP under production settings: redirected to HTTPS like any request.
    plain = post(served.port, body, headers)
    assert plain.status == 301
    assert plain.headers["Location"] == f"https://127.0.0.1:{served.port}{WEBHOOK}"
    request_id = f"bee-{uuid.uuid4().hex}"
    proxied = {**headers, "X-Forwarded-Proto": "https"}
    answer = post(served.port, body, {**proxied, "X-Request-ID": request_id})
    assert answer.status == 200 and json.loads(answer.body)["result"] == "queued"
    assert answer.headers["X-Request-ID"] == request_id
    assert answer.headers["Strict-Transport-Security"]
    line = served.logged("the webhook's log line", lambda e: e.get("request_id") == request_id)
    assert (line["view"], line["method"], line["path"], line["status"], line["user"]) == (
        "api-webhook-beeos",
        "POST",
        WEBHOOK,
        200,
        None,
    )
    # A host not in ALLOWED_HOSTS, a body over DATA_UPLOAD_MAX_MEMORY_SIZE: JSON 4xx.
    evil = post(served.port, body, {**proxied, "Host": "evil.example"})
    assert evil.status == 400 and json.loads(evil.body) == {"detail": "Bad request."}
    big_body, big_headers = signed_event("tsk_served_2", padding="x" * 2_700_000)
    big = post(served.port, big_body, {**big_headers, "X-Forwarded-Proto": "https"})
    assert big.status == 413 and "at most" in json.loads(big.body)["detail"]
    assert served.sql("SELECT task_id, status FROM console_webhookinboxevent") == [
        ("tsk_served_1", "queued")
    ]


def test_sigterm_lets_the_request_and_the_job_in_flight_finish(served, admin):
    """Last: it stops the server."""
    lock = psycopg.connect(conninfo_of(served.owner_url))
    lock.execute("LOCK TABLE tasks_task IN ACCESS EXCLUSIVE MODE")
    try:
        # A job: the projection audit, started from its page (it reads every task).
        started = admin.request(
            "POST",
            "/audit/projections/jobs/",
            form={"kind": "audit", "csrfmiddlewaretoken": admin.cookies["csrftoken"]},
        )
        assert started.status == 302, started.text[:500]
        job = int(re.search(r"/jobs/(\d+)/", started.headers["Location"])[1])
        # A request: the task list.
        answers: list[Response] = []
        in_flight = threading.Thread(
            target=lambda: answers.append(admin.request("GET", "/tasks/", X_Request_ID="slow-1"))
        )
        in_flight.start()
        wait_for(
            "the job and the request to wait for the tasks table", lambda: waiting(served) >= 2
        )

        recipe = only_child(served.process.pid)  # what make runs, and passes SIGTERM to
        os.kill(recipe, signal.SIGTERM)
        served.logged("gunicorn to stop", lambda e: e["message"] == "Handling signal: term")
        served.logged("the worker to stop", lambda e: "finishing the current job" in e["message"])
        # gunicorn passes SIGTERM to all its workers at once: the idle one exits now, the
        # busy one only when its request is done.
        served.logged("the idle gunicorn worker", lambda e: e["message"].startswith("Worker exit"))
        assert not answers and served.process.poll() is None  # both still in flight
    finally:
        lock.rollback()
        lock.close()

    in_flight.join(timeout=PATIENCE)
    assert answers and answers[0].status == 200
    assert "slow-1" == answers[0].headers["X-Request-ID"]
    assert served.process.wait(timeout=PATIENCE) == 0
    tail = served.log_entries()[-1]
    assert tail["message"] == "stopped: gunicorn exit status 0, worker exit status 0"
    assert served.sql("SELECT state FROM console_projectionjob WHERE id = %s", job) == [
        ("finished",)
    ]
    assert served.sql("SELECT status FROM django_tasks_database_dbtaskresult") == [("SUCCESSFUL",)]
    assert (
        served.logged("the slow request's line", lambda e: e.get("request_id") == "slow-1")[
            "status"
        ]
        == 200
    )
    assert processes_in_session(served.process.pid) == []  # nothing left behind
    # Everything make serve printed, from start to stop, was a JSON log line.
    for line in served.output:
        entry = json.loads(line)
        assert {"timestamp", "level", "logger", "message"} <= entry.keys(), line


def waiting(served: Served) -> int:
    """Backends of the served database waiting for a lock."""
    name = urlsplit(served.owner_url).path.lstrip("/")
    return served.sql(
        "SELECT count(*) FROM pg_stat_activity WHERE datname = %s AND wait_event_type = 'Lock'",
        name,
    )[0][0]


def only_child(pid: int) -> int:
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    assert len(children) == 1, children
    return int(children[0])


def processes_in_session(session: int) -> list[str]:
    """Commands of the live processes in a session (Linux /proc)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # gone meanwhile
        state, sid = fields[0], int(fields[3])
        if sid == session and state != "Z":
            found.append((stat.parent / "cmdline").read_bytes().replace(b"\0", b" ").decode())
    return found
