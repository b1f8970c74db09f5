"""/metrics: scraped through Django, parsed by prometheus_client's own parser, checked
against the database after writing through the real services.

Process metrics (latency, ingest and webhook results, worker jobs) are counters of this
test process: tests compare what they add, never absolute values. The multi-process
test starts real child processes that write into a PROMETHEUS_MULTIPROC_DIR.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import hmac
import http.client
import importlib.util
import io
import json
import os
import re
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml
from django.contrib.auth.models import Group
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from django_tasks_db.models import DBTaskResult
from prometheus_client.parser import text_string_to_metric_families

from beeos_console.auditlog.services import Actor
from beeos_console.cancels.engine import recheck
from beeos_console.cancels.gateways import LocalGateway
from beeos_console.cancels.models import CancelRequest
from beeos_console.core import tokens
from beeos_console.dashboard.selectors import dashboard_context
from beeos_console.metrics import sources
from beeos_console.metrics.checks import metrics_token_length
from beeos_console.mirror.states import DISPLAY_STATUSES
from beeos_console.projection.models import ProjectionJob
from beeos_console.projection.reprojection import start_job
from beeos_console.upstream import clients
from beeos_console.upstream.models import SyncCursor
from operations.models import RuntimeOperation
from operations.services.cancel import cancel_operation
from tasks.models import Task
from tasks.services.cancel import cancel_task
from tasks.states import TASK_PROTOCOLS
from tests.standin import BeeOSStandIn

from .factories import make_a2a_task, make_operation, make_task, openapi_task
from .ports import free_port
from .test_cancel_beeos import CLOUD_KEY, KEY, TASK_CANCEL, make_gateway, task_pair

pytestmark = pytest.mark.django_db

TOKEN = "metrics-" + "t" * 40
ROOT = Path(__file__).resolve().parent.parent
ALERTS = ROOT / "bench" / "prometheus-alerts.yml"
OLGA = Actor("olga-operator")
# Every scrape runs this many SQL queries, whatever the tables hold (pinned).
SCRAPE_QUERIES = 10


@pytest.fixture(autouse=True)
def metrics_token(settings, monkeypatch):
    settings.METRICS_TOKEN = TOKEN
    settings.METRICS_BIND = ""
    monkeypatch.delenv("PROMETHEUS_MULTIPROC_DIR", raising=False)


def scrape(client) -> dict:
    response = client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith("text/plain; version=0.0.4")
    return {f.name: f for f in text_string_to_metric_families(response.content.decode())}


def value(families: dict, name: str, sample: str | None = None, **labels: str) -> float:
    """One sample's value; ``sample`` names it when it differs from the family (``_total``)."""
    family = families[name]
    wanted = sample or name
    found = [s.value for s in family.samples if s.name == wanted and s.labels == labels]
    assert len(found) == 1, (name, labels, [s for s in family.samples if s.name == wanted])
    return found[0]


def values(families: dict, name: str, label: str) -> dict[str, float]:
    return {s.labels[label]: s.value for s in families[name].samples}


def fresh_task(status: str = "running", **extra):
    """A task that changed a minute ago (not stuck)."""
    return make_task(status, now=timezone.now(), minutes_ago=1, **extra)


# --- access -------------------------------------------------------------------------------


class TestAccess:
    def test_the_token_is_required_and_no_login(self, client):
        response = client.get("/metrics")
        assert response.status_code == 401
        assert response["WWW-Authenticate"].startswith("Bearer")
        wrong = client.get("/metrics", HTTP_AUTHORIZATION="Bearer " + "x" * 48)
        assert wrong.status_code == 403
        assert client.get("/metrics", HTTP_AUTHORIZATION=f"Basic {TOKEN}").status_code == 401
        ok = client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
        assert ok.status_code == 200
        assert "beeos_console_tasks" in ok.content.decode()
        assert "sessionid" not in ok.cookies

    def test_no_token_configured_is_a_404(self, client, settings):
        settings.METRICS_TOKEN = ""
        assert client.get("/metrics").status_code == 404
        assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer anything").status_code == 404

    def test_a_token_too_short_is_refused_by_check_and_by_the_endpoint(self, client, settings):
        settings.METRICS_TOKEN = "short"
        assert [e.id for e in metrics_token_length()] == ["console_metrics.E001"]
        assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer short").status_code == 404

    def test_the_metrics_bind_needs_no_token(self, client, settings):
        settings.METRICS_TOKEN = ""
        settings.METRICS_BIND = "testserver:80"  # the test client's SERVER_NAME:SERVER_PORT
        assert client.get("/metrics").status_code == 200
        settings.METRICS_BIND = "testserver:9100"  # another listener: not this request's
        assert client.get("/metrics").status_code == 404

    def test_post_is_refused(self, client):
        response = client.post("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
        assert response.status_code == 405


# --- database gauges ----------------------------------------------------------------------


class TestMirror:
    def test_tasks_and_operations_by_status_and_protocol_match_the_tables(self, client):
        for status in ("running", "running", "completed", "failed", "queued", "paused_by_ops"):
            fresh_task(status)
        make_a2a_task("TASK_STATE_WORKING")
        make_a2a_task("TASK_STATE_COMPLETED")
        for status in ("running", "outcome_unknown", "succeeded", "projection_pending"):
            make_operation(status)
        families = scrape(client)

        tasks = Counter(Task.objects.values_list("status", flat=True))
        assert values(families, "beeos_console_tasks", "status") == {
            s: float(tasks[s]) for s in DISPLAY_STATUSES
        }
        assert tasks["unmapped"] == 1 and tasks["processing"] == 3
        ops = Counter(RuntimeOperation.objects.values_list("status", flat=True))
        assert values(families, "beeos_console_operations", "status") == {
            s: float(ops[s]) for s in DISPLAY_STATUSES
        }
        raw = Counter(RuntimeOperation.objects.values_list("raw_status", flat=True))
        attention = values(families, "beeos_console_operations_needing_attention", "raw_status")
        assert attention["outcome_unknown"] == raw["outcome_unknown"] == 1
        assert attention["projection_pending"] == 1 and attention["expired"] == 0

        # By protocol too: every protocol and status, zeros included, as the table holds.
        by_protocol = Counter(Task.objects.values_list("protocol", "status"))
        exported = {
            (sample.labels["protocol"], sample.labels["status"]): sample.value
            for sample in families["beeos_console_tasks_by_protocol"].samples
        }
        assert exported == {
            (p, s): float(by_protocol[(p, s)]) for p in TASK_PROTOCOLS for s in DISPLAY_STATUSES
        }
        assert exported[("a2a", "processing")] == exported[("a2a", "completed")] == 1
        assert exported[("openapi", "processing")] == 2 and exported[("openapi", "unmapped")] == 1
        assert exported[("product", "queued")] == 0

    def test_stuck_work_is_what_the_dashboard_lists(self, client, settings):
        settings.CONSOLE_STUCK_AFTER_MINUTES = 30
        make_task("running", now=timezone.now(), minutes_ago=90)
        make_task("queued", now=timezone.now(), minutes_ago=45)
        fresh_task("running")
        make_task("completed", now=timezone.now(), minutes_ago=500)  # terminal: never stuck
        old = timezone.now() - dt.timedelta(hours=3)
        stamp = old.isoformat().replace("+00:00", "Z")
        make_operation("running", createdAt=stamp, updatedAt=stamp)
        make_operation("projection_pending", createdAt=stamp, updatedAt=stamp)
        make_operation("succeeded", createdAt=stamp, updatedAt=stamp)
        families = scrape(client)

        dashboard = dashboard_context()
        assert (
            value(families, "beeos_console_stuck_work", kind="task") == len(dashboard["stuck"]) == 2
        )
        # The operations rule is the lists' ?stuck= (and the detail banner's).
        assert value(families, "beeos_console_stuck_work", kind="operation") == 2
        assert (
            value(families, "beeos_console_operations_projection_pending_late")
            == len(dashboard["pending_late"])
            == 1
        )
        assert value(families, "beeos_console_stuck_after_seconds") == 30 * 60

    def test_counts_stop_at_the_cap(self, client, settings):
        settings.METRICS_COUNT_CAP = 2
        for _ in range(3):
            make_task("running")
        families = scrape(client)
        assert value(families, "beeos_console_stuck_work", kind="task") == 2
        assert value(families, "beeos_console_metrics_count_cap") == 2
        # The maintained counters are never capped.
        assert value(families, "beeos_console_tasks", status="processing") == 3
        assert (
            value(
                families, "beeos_console_tasks_by_protocol", protocol="openapi", status="processing"
            )
            == 3
        )


ATTEMPTS = "beeos_console_cancel_attempts"


class TestCancels:
    def test_attempts_by_gateway_and_result_count_each_attempt_once(self, client):
        gw = LocalGateway()
        running, done = fresh_task("running"), fresh_task("completed")
        op = make_operation("running")
        before = scrape(client)
        first = cancel_task(running.protocol, running.task_id, actor=OLGA, reason="r", gw=gw)
        assert first.result == "cancelled"
        # The same idempotency key again: a replay, not a new attempt.
        again = cancel_task(
            running.protocol,
            running.task_id,
            actor=OLGA,
            reason="r",
            gw=gw,
            idempotency_key=first.request.idempotency_key,
        )
        assert again.replayed
        refused = cancel_task(done.protocol, done.task_id, actor=OLGA, reason="r", gw=gw)
        assert refused.result == "refused"
        assert cancel_operation(op.operation_id, actor=OLGA, reason="r", gw=gw).ok
        families = scrape(client)

        in_db = Counter(CancelRequest.objects.values_list("gateway", "result"))
        assert in_db == {("local", "cancelled"): 2, ("local", "refused"): 1}
        for (gateway, result), n in in_db.items():
            added = sum_of(families, ATTEMPTS, gateway=gateway, result=result) - sum_of(
                before, ATTEMPTS, gateway=gateway, result=result
            )
            assert added == n, (gateway, result)
        assert sum_of(families, ATTEMPTS) - sum_of(before, ATTEMPTS) == 3
        assert value(families, "beeos_console_uncertain_cancels_open") == 0

    def test_an_uncertain_cancel_is_open_until_resolved_and_counted_once(self, client, monkeypatch):
        monkeypatch.setattr(clients, "TIMEOUT", (1.0, 0.5))
        uncertain = {"gateway": "beeos", "result": "uncertain"}
        counted = sum_of(scrape(client), ATTEMPTS, **uncertain)
        with BeeOSStandIn(api_key=KEY, cloud_api_key=CLOUD_KEY) as standin:
            gw = make_gateway(standin)
            task = task_pair(standin, upstream_status="running", mirror_status="running")
            standin.delay(TASK_CANCEL, 1.0, method="POST")
            outcome = cancel_task(task.protocol, task.task_id, actor=OLGA, reason="r", gw=gw)
            assert outcome.result == "uncertain", outcome.message
            families = scrape(client)
            assert value(families, "beeos_console_uncertain_cancels_open") == 1
            assert value(families, "beeos_console_uncertain_cancels_gave_up") == 0
            assert value(families, "beeos_console_uncertain_cancel_oldest_age_seconds") >= 0
            assert sum_of(families, ATTEMPTS, **uncertain) == counted + 1
            # Its first re-read waits in the worker's queue, due in a minute.
            assert value(families, "beeos_console_worker_jobs", status="scheduled") == 1
            # A re-read that finds the task cancelled resolves it: saved again, not recounted.
            later = outcome.request.finished_at + dt.timedelta(minutes=2)
            assert recheck(outcome.request.pk, now=later, gw=gw).outcome == "cancelled"
            gw.client.rest_client.pool_manager.clear()
        families = scrape(client)
        assert value(families, "beeos_console_uncertain_cancels_open") == 0
        assert sum_of(families, ATTEMPTS, **uncertain) == counted + 1


class TestSyncAuditWorker:
    def test_sync_last_success_and_lag_per_kind(self, client):
        done = timezone.now() - dt.timedelta(seconds=90)
        SyncCursor.objects.create(name="last_success:tasks", value=done.isoformat())
        SyncCursor.objects.create(name="tasks", value="cursor-abc")
        families = scrape(client)
        at = value(families, "beeos_console_sync_last_success_timestamp_seconds", kind="tasks")
        assert at == pytest.approx(done.timestamp(), abs=0.001)
        assert 90 <= value(families, "beeos_console_sync_lag_seconds", kind="tasks") < 150
        moved = value(
            families, "beeos_console_sync_cursor_updated_timestamp_seconds", cursor="tasks"
        )
        assert moved == pytest.approx(SyncCursor.objects.get(name="tasks").updated_at.timestamp())

    def test_audit_findings_by_category_from_the_newest_finished_audit(self, client):
        make_task("paused_by_ops")  # a raw state no table knows: unmapped, fails the audit
        fresh_task("running")
        with pytest.raises(SystemExit):
            call_command("audit_projections", stdout=io.StringIO(), stderr=io.StringIO())
        job = ProjectionJob.objects.get(kind="audit", state="finished")
        families = scrape(client)

        findings = {
            (s.labels["category"], s.labels["failing"]): s.value
            for s in families["beeos_console_projection_audit_findings"].samples
        }
        assert {name: n for (name, _failing), n in findings.items()} == {
            name: float(c["count"]) for name, c in job.report["categories"].items()
        }
        assert findings[("unmapped", "true")] == 1
        assert (
            findings[("producer_note", "false")]
            == job.report["categories"]["producer_note"]["count"]
        )
        assert value(families, "beeos_console_projection_audit_failing") == 1
        assert value(
            families, "beeos_console_projection_audit_finished_timestamp_seconds"
        ) == pytest.approx(job.finished_at.timestamp())
        assert value(families, "beeos_console_projection_audit_last_job_failed") == 0

        # A job that crashed: flagged, while the findings stay those of the last finished one.
        ProjectionJob.objects.create(kind="audit", state="failed", requested_by="ada-admin")
        families = scrape(client)
        assert value(families, "beeos_console_projection_audit_last_job_failed") == 1
        assert value(families, "beeos_console_projection_audit_failing") == 1

    @pytest.mark.django_db(transaction=True)
    def test_worker_jobs_waiting_then_run(self, client):
        make_task("paused_by_ops")
        start_job("audit", actor=Actor("ada-admin"))
        families = scrape(client)
        assert value(families, "beeos_console_worker_jobs", status="ready") == 1
        assert DBTaskResult.objects.ready().count() == 1
        assert value(families, "beeos_console_worker_oldest_ready_job_age_seconds") >= 0
        task = "beeos_console.projection.reprojection.run_projection_job"
        started = "beeos_console_worker_jobs_started"

        def ran(families: dict) -> tuple[float, float]:
            return (
                sum_of(families, started, task=task),
                sum_of(
                    families, "beeos_console_worker_jobs_finished", task=task, status="successful"
                ),
            )

        before = ran(families)
        call_command("db_worker", "--batch", "--no-startup-delay", verbosity=0)
        families = scrape(client)
        assert ran(families) == (before[0] + 1, before[1] + 1)
        assert value(families, "beeos_console_worker_jobs", status="ready") == 0
        assert value(families, "beeos_console_worker_oldest_ready_job_age_seconds") == 0


def sum_of(families: dict, name: str, **labels: str) -> float:
    """A process counter's ``_total`` (0 before its first increment)."""
    if name not in families:
        return 0.0
    return sum(
        s.value
        for s in families[name].samples
        if s.name == f"{name}_total" and all(s.labels.get(k) == v for k, v in labels.items())
    )


# --- process metrics ------------------------------------------------------------------------


def latency_count(families: dict, **labels: str) -> float:
    name = "beeos_console_http_request_duration_seconds"
    return sum(
        s.value
        for s in families[name].samples
        if s.name == f"{name}_count" and all(s.labels.get(k) == v for k, v in labels.items())
    )


class TestRequests:
    def test_latency_by_view_name_never_the_path(self, client, admin_user):
        task = fresh_task("running")
        before = scrape(client)
        client.force_login(admin_user)
        assert client.get(f"/tasks/{task.task_id}/").status_code == 200
        assert client.get(f"/tasks/{task.task_id}/").status_code == 200
        assert client.get("/no-such-page/").status_code == 404
        client.logout()
        assert client.get("/healthz").status_code == 200
        families = scrape(client)

        detail = {"view": "tasks:detail", "method": "GET", "status": "2xx"}
        assert latency_count(families, **detail) == latency_count(before, **detail) + 2
        unmatched = {"view": "unmatched", "status": "4xx"}
        assert latency_count(families, **unmatched) == latency_count(before, **unmatched) + 1
        healthz = {"view": "healthz", "method": "GET"}
        assert latency_count(families, **healthz) == latency_count(before, **healthz) + 1
        views = {
            s.labels["view"]
            for s in families["beeos_console_http_request_duration_seconds"].samples
        }
        assert not any(task.task_id in v or "/" in v for v in views), views
        name = "beeos_console_http_request_duration_seconds"
        buckets = [s for s in families[name].samples if s.name == f"{name}_bucket"]
        assert {s.labels["le"] for s in buckets} >= {"0.005", "1.0", "30.0", "+Inf"}

    def test_ingest_records_and_webhook_events_by_result(self, client, settings, django_user_model):
        feeder = django_user_model.objects.create_user("metrics-feeder")
        feeder.groups.add(Group.objects.get_or_create(name="feeder")[0])
        _, key = tokens.issue(feeder, "test")
        records = [
            {"kind": "openapi_task", "data": openapi_task("running")},
            {"kind": "openapi_task", "data": openapi_task("completed")},
            {"kind": "openapi_task", "data": {"task_id": "x" * 300, "status": "running"}},
            {"kind": "no_such_kind", "data": {}},
        ]
        before = scrape(client)
        response = client.post(
            "/api/v1/ingest/",
            json.dumps({"records": records}),
            content_type="application/json",
            HTTP_AUTHORIZATION=f"Bearer {key}",
        )
        assert response.status_code == 200
        answered = Counter(
            (r["kind"] if r["kind"] == "openapi_task" else "unknown", r["result"])
            for r in response.json()["results"]
        )
        assert answered == {
            ("openapi_task", "created"): 2,
            ("openapi_task", "rejected"): 1,
            ("unknown", "rejected"): 1,
        }

        settings.BEEOS_WEBHOOK_SECRET = WEBHOOK_SECRET
        body = json.dumps(
            {
                "type": "task_status",
                "task_id": "tsk_metrics_hook",
                "status": "running",
                "timestamp": "2026-11-30T08:10:00Z",
            }
        ).encode()
        unsigned = client.generic("POST", WEBHOOK, body, content_type="application/json")
        assert unsigned.status_code == 401
        signed = client.generic(
            "POST", WEBHOOK, body, content_type="application/json", **signed_headers(body)
        )
        assert signed.status_code == 200
        webhook_said = signed.json()["result"]
        families = scrape(client)

        def added(name: str, **labels: str) -> float:
            return sum_of(families, name, **labels) - sum_of(before, name, **labels)

        for (kind, result), n in answered.items():
            assert added("beeos_console_ingest_records", kind=kind, result=result) == n
        assert added("beeos_console_webhook_events", result="http_401") == 1
        assert added("beeos_console_webhook_events", result=webhook_said) == 1


WEBHOOK = "/api/v1/webhooks/beeos/"
WEBHOOK_SECRET = "whsec_" + "m" * 40


def signed_headers(body: bytes) -> dict[str, str]:
    """A task push signature (contracts/webhooks-guide.mdx): HMAC-SHA256 of "t.body"."""
    at = str(int(time.time()))
    mac = hmac.new(WEBHOOK_SECRET.encode(), at.encode() + b"." + body, hashlib.sha256)
    return {"HTTP_X_BEEOS_SIGNATURE": f"t={at},v1={mac.hexdigest()}"}


# --- the extension point, bounded scrapes ------------------------------------------------------


class TestSources:
    def test_one_registration_adds_a_gauge_and_a_failing_source_spares_the_others(
        self, client, monkeypatch
    ):
        def backlog(now):
            yield sources.gauge("beeos_console_test_backlog", "A test source.", 7)

        def broken(now):
            with connection.cursor() as cursor:
                cursor.execute("SELECT * FROM no_such_table_for_metrics")
            yield from ()

        monkeypatch.setitem(sources.SOURCES, "test_backlog", backlog)
        with pytest.raises(ValueError):
            sources.source("test_backlog")(broken)  # one name, one source
        families = scrape(client)
        assert value(families, "beeos_console_test_backlog") == 7
        assert value(families, "beeos_console_metrics_source_up", source="test_backlog") == 1

    @pytest.mark.django_db(transaction=True)
    def test_a_failing_source_is_reported_and_the_rest_served(self, client, monkeypatch):
        def broken(now):
            with connection.cursor() as cursor:
                cursor.execute("SELECT * FROM no_such_table_for_metrics")
            yield from ()

        monkeypatch.setitem(sources.SOURCES, "test_broken", broken)
        families = scrape(client)
        assert value(families, "beeos_console_metrics_source_up", source="test_broken") == 0
        assert value(families, "beeos_console_metrics_source_up", source="status_counts") == 1
        assert "beeos_console_tasks" in families

    def test_a_scrape_runs_a_fixed_number_of_bounded_queries(self, client):
        def measure() -> int:
            with CaptureQueriesContext(connection) as ctx:
                scrape(client)
            for query in ctx.captured_queries:
                sql = query["sql"].upper()
                if "COUNT(" in sql:
                    assert "LIMIT" in sql, f"unbounded count: {query['sql']}"
            return len(ctx.captured_queries)

        populate(1)
        small = measure()
        populate(6)
        large = measure()
        assert small == large == SCRAPE_QUERIES


def populate(n: int) -> None:
    """Rows in every table a source reads."""
    gw = LocalGateway()
    for i in range(n):
        task = make_task("running")
        fresh_task("queued")
        make_a2a_task("TASK_STATE_WORKING")
        make_operation(["running", "projection_pending", "outcome_unknown"][i % 3])
        cancel_task(task.protocol, task.task_id, actor=OLGA, reason="r", gw=gw)
        SyncCursor.objects.create(
            name=f"last_success:kind{n}-{i}", value=timezone.now().isoformat()
        )
    start_job("audit", actor=Actor("ada-admin"))
    with contextlib.suppress(SystemExit):
        call_command("audit_projections", stdout=io.StringIO(), stderr=io.StringIO())


# --- several processes ------------------------------------------------------------------------

CHILD = """
import os, sys
import django
django.setup()
from django.test import Client
client = Client()
for _ in range(int(sys.argv[1])):
    assert client.get("/healthz", HTTP_HOST="127.0.0.1").status_code == 200
"""


def test_several_processes_are_summed_and_database_gauges_counted_once(
    client, tmp_path, monkeypatch
):
    fresh_task("running")
    fresh_task("completed")
    env = {
        **os.environ,
        "PROMETHEUS_MULTIPROC_DIR": str(tmp_path),
        "DJANGO_SETTINGS_MODULE": "beeos_console.settings",
        "DATABASE_URL": os.environ.get("DATABASE_URL", "postgres://127.0.0.1/unused"),
    }
    children = [
        subprocess.run(
            [sys.executable, "-c", CHILD, str(n)], env=env, cwd=ROOT, capture_output=True
        )
        for n in (3, 5)
    ]
    for child in children:
        assert child.returncode == 0, child.stderr.decode()[-2000:]
    assert len(list(tmp_path.glob("histogram_*.db"))) == 2  # one file per process

    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path))
    families = scrape(client)
    assert latency_count(families, view="healthz", method="GET", status="2xx") == 8
    # Database gauges come from the scraping process alone: once, not once per process.
    tasks = [
        s for s in families["beeos_console_tasks"].samples if s.labels["status"] == "processing"
    ]
    assert [s.value for s in tasks] == [1.0]


@pytest.mark.django_db(transaction=True)
def test_under_gunicorn_any_worker_answers_with_every_workers_requests(tmp_path):
    """Two gunicorn workers, requests spread over them; whichever answers the scrape
    (here on METRICS_BIND, without a token) counts all of them, and the database
    gauges once."""
    fresh_task("running")
    db = connection.settings_dict
    env = {
        **os.environ,
        "DATABASE_URL": f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}",
        "PROMETHEUS_MULTIPROC_DIR": str(tmp_path),
        "METRICS_TOKEN": "",
        "WEB_CONCURRENCY": "2",
        "LOG_FORMAT": "text",
    }
    server, port, metrics_port = start_gunicorn(env)
    try:

        def pids() -> set[str]:
            return {p.name.split("_")[-1] for p in tmp_path.glob("histogram_*.db")}

        # A new connection each: the kernel hands them to either worker. On a busy machine
        # one worker may take dozens in a row, so go on until both have answered.
        sent = 0
        while sent < 40 or (len(pids()) < 2 and sent < 2000):
            assert get(port, "/healthz")[0] == 200
            sent += 1
        assert get(port, "/metrics")[0] == 404  # the public bind: no token, no metrics
        status, text = get(metrics_port, "/metrics")
        assert status == 200
        families = {f.name: f for f in text_string_to_metric_families(text)}
        assert latency_count(families, view="healthz", method="GET", status="2xx") == sent
        assert len(pids()) == 2, pids()  # both workers served requests
        assert value(families, "beeos_console_tasks", status="processing") == 1
    finally:
        server.terminate()
        _, errors = server.communicate(timeout=30)
    assert server.returncode == 0, errors.decode()[-2000:]


def get(port: int, path: str) -> tuple[int, str]:
    connection_ = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection_.request("GET", path, headers={"Connection": "close"})
        response = connection_.getresponse()
        return response.status, response.read().decode()
    finally:
        connection_.close()


def start_gunicorn(env: dict[str, str]) -> tuple[subprocess.Popen, int, int]:
    """gunicorn on two free ports (PORT, METRICS_BIND), once /metrics answers there. A
    port can be taken between free_port() and gunicorn's bind (by any connection's
    ephemeral port): then gunicorn exits, and it is started again on two others."""
    attempts = 0
    while True:
        attempts += 1
        port, metrics_port = free_port(), free_port()
        server = subprocess.Popen(
            [
                str(Path(sys.executable).with_name("gunicorn")),
                "-c",
                "beeos_console/gunicorn_conf.py",
                "beeos_console.wsgi",
            ],
            cwd=ROOT,
            env={**env, "PORT": str(port), "METRICS_BIND": f"127.0.0.1:{metrics_port}"},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        if wait_until_up(metrics_port, server):
            return server, port, metrics_port
        errors = server.communicate(timeout=30)[1].decode()
        if "Connection in use" not in errors or attempts == 3:
            raise AssertionError(f"gunicorn exited ({server.returncode}): {errors[-2000:]}")


def wait_until_up(port: int, server: subprocess.Popen, seconds: float = 60) -> bool:
    """True once /metrics answers 200 on ``port``; False if the server exits first. (It
    probes /metrics, not /healthz: the healthz count a test asserts stays its own.)"""
    deadline = time.monotonic() + seconds
    while server.poll() is None:
        try:
            if get(port, "/metrics")[0] == 200:
                return True
        except OSError:
            pass
        if time.monotonic() > deadline:
            server.kill()
            raise AssertionError(f"nothing answered /metrics on port {port} in {seconds} s")
        time.sleep(0.2)
    return False


def test_the_gunicorn_config_binds_metrics_and_forgets_dead_workers(tmp_path, monkeypatch):
    """METRICS_BIND is one more gunicorn bind; child_exit removes a dead worker's live
    gauges from PROMETHEUS_MULTIPROC_DIR (its counters stay: they still count)."""
    monkeypatch.setenv("METRICS_BIND", "127.0.0.1:9187")
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path))
    spec = importlib.util.spec_from_file_location(
        "gunicorn_conf_under_test", ROOT / "beeos_console" / "gunicorn_conf.py"
    )
    conf = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(conf)
    assert "127.0.0.1:9187" in conf.bind
    for name in ("gauge_livesum_4242.db", "counter_4242.db", "gauge_livesum_4343.db"):
        (tmp_path / name).write_bytes(b"")
    conf.child_exit(None, SimpleNamespace(pid=4242))
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "counter_4242.db",
        "gauge_livesum_4343.db",
    ]


# --- the alert rules -------------------------------------------------------------------------


def test_every_alert_uses_a_metric_the_console_exports(client):
    rules = yaml.safe_load(ALERTS.read_text())
    alerts = [rule for group in rules["groups"] for rule in group["rules"]]
    names = {rule["alert"] for rule in alerts}
    assert {"BeeOSConsoleStuckWork", "BeeOSConsoleUncertainCancels"} <= names
    assert {"BeeOSConsoleSyncLagging", "BeeOSConsoleProjectionAuditFailing"} <= names
    populate(1)  # a row for every source, a finished audit included
    families = scrape(client)
    suffixes = {"counter": ("_total",), "histogram": ("_bucket", "_count", "_sum")}
    exported = set()
    for family in families.values():  # sample names, also of families with no sample yet
        exported |= {family.name + end for end in suffixes.get(family.type, ("",))}
    for rule in alerts:
        assert rule["labels"]["severity"] in ("page", "ticket"), rule["alert"]
        assert rule["annotations"]["summary"], rule["alert"]
        for metric in re.findall(r"beeos_console_[a-z_]+", rule["expr"]):
            if rule["annotations"].get("placeholder") == "true":
                continue  # exported once its source is registered
            assert metric in exported, (rule["alert"], metric)
