"""Production settings pass `check --deploy`; the demo defaults do not leak into it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run_manage(*args: str, **env: str) -> subprocess.CompletedProcess:
    environ = {k: v for k, v in os.environ.items() if k not in {"DEBUG", "SECRET_KEY"}}
    environ.update(env)
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=environ,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_check_deploy_is_clean_with_production_settings():
    result = run_manage(
        "check",
        "--deploy",
        "--fail-level",
        "WARNING",
        DEBUG="0",
        SECRET_KEY="x7#Kq2!mZr9$Lp4@Wt8^Bv3&Nc6*Hd1(Fg5)Js0-Ye2+Ua7=Oi4",
        ALLOWED_HOSTS="console.example.com",
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_production_refuses_to_start_without_a_secret_key():
    result = run_manage("check", DEBUG="0", ALLOWED_HOSTS="console.example.com")
    assert result.returncode != 0
    assert "SECRET_KEY must be set" in result.stderr


def test_demo_defaults_are_flagged_by_check_deploy():
    result = run_manage("check", "--deploy", "--fail-level", "WARNING", DEBUG="1")
    assert result.returncode != 0


DEMO_INGEST = """
import json, logging
from django.contrib.auth.models import Group, User
from django.test import Client
from beeos_console import roles, tokens
logging.basicConfig(level=logging.WARNING)
user = User.objects.create_user("demo-feeder")
user.groups.add(Group.objects.get_or_create(name=roles.FEEDER)[0])
_, key = tokens.issue(user)
task = {"task_id": "tsk_demo", "agent_id": "agt_1", "status": "running",
        "updated_at": "2026-11-30T08:00:00Z"}
done = {**task, "status": "completed", "updated_at": "2026-11-30T08:05:00Z"}
records = [{"kind": "openapi_task", "data": task}, {"kind": "openapi_task", "data": {}},
           {"kind": "openapi_task", "data": done}]
response = Client().post(
    "/api/v1/ingest/", json.dumps({"records": records}),
    content_type="application/json", HTTP_AUTHORIZATION="Bearer " + key,
)
print(response.status_code, [r["result"] for r in response.json()["results"]])
"""


def test_the_sqlite_demo_ingests_one_by_one(tmp_path):
    """The demo database is SQLite: the ingest API answers there too, without a
    failed PostgreSQL-only batch in the log first."""
    env = {
        "DATABASE_URL": f"sqlite:///{tmp_path / 'demo.sqlite3'}",
        "DEBUG": "1",
        "ALLOWED_HOSTS": "testserver",
    }
    migrated = run_manage("migrate", "--no-input", **env)
    assert migrated.returncode == 0, migrated.stderr
    result = run_manage("shell", "-c", DEMO_INGEST, **env)
    assert result.returncode == 0, result.stderr
    assert "200 ['created', 'rejected', 'updated']" in result.stdout
    assert "rolled back" not in result.stderr
