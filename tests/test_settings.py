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


def test_sqlite_is_refused():
    """PostgreSQL everywhere: there is no SQLite branch to fall back to."""
    result = run_manage("check", DATABASE_URL="sqlite:///demo.sqlite3", DEBUG="1")
    assert result.returncode != 0
    assert "PostgreSQL" in result.stderr
