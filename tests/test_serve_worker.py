"""`manage.py worker` (make serve's and make run's worker) stops without losing a job.

A real worker process runs a real job (the projection audit) that the test holds up
with a lock on the tasks table; signals arrive while it runs.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest
from django.core.management import call_command
from django.db import connection
from django_tasks.base import TaskResultStatus
from django_tasks_db.models import DBTaskResult

from beeos_console.auditlog.management.commands.grant_app_role import conninfo_of
from beeos_console.core.management.commands.worker import JobReturned, StoppingWorker
from beeos_console.core.management.commands.worker import logger as worker_logger
from beeos_console.projection.models import ProjectionJob
from beeos_console.projection.reprojection import run_projection_job

ROOT = Path(__file__).resolve().parents[1]
PATIENCE = 240.0  # bounds a wait on a slow machine; nothing is timed

pytestmark = pytest.mark.django_db(transaction=True)  # the worker process sees the rows


class Worker:
    """`manage.py worker` on the test database, its output collected as it comes."""

    def __init__(self, url: str) -> None:
        env = {k: v for k, v in os.environ.items() if k != "DEBUG"}
        env["DATABASE_URL"] = url
        self.process = subprocess.Popen(
            [
                sys.executable,
                "manage.py",
                "worker",
                "--no-reload",
                "--no-startup-delay",
                "--interval",
                "0.2",
            ],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.output: list[str] = []
        self.reader = threading.Thread(
            target=lambda: self.output.extend(self.process.stdout), daemon=True
        )
        self.reader.start()

    def said(self, text: str) -> None:
        wait_for(f"the worker to say {text!r}", lambda: any(text in line for line in self.output))

    def stopped(self) -> int:
        code = self.process.wait(timeout=PATIENCE)
        self.reader.join(timeout=10)
        return code

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


def wait_for(what: str, check) -> None:
    deadline = time.monotonic() + PATIENCE
    while not check():
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(0.1)


@pytest.fixture
def test_database_url() -> str:
    url = os.environ.get("DATABASE_URL", "")
    if not url:
        pytest.skip("needs DATABASE_URL")
    return urlunsplit(urlsplit(url)._replace(path="/" + connection.settings_dict["NAME"]))


@pytest.fixture
def tasks_locked(test_database_url):
    """The tasks table locked, as a long transaction elsewhere would: the audit waits."""
    lock = psycopg.connect(conninfo_of(test_database_url))
    lock.execute("LOCK TABLE tasks_task IN ACCESS EXCLUSIVE MODE")
    yield lock
    lock.rollback()
    lock.close()


@pytest.fixture
def audit_job(tasks_locked) -> tuple[ProjectionJob, DBTaskResult]:
    job = ProjectionJob.objects.create(kind=ProjectionJob.Kind.AUDIT, requested_by="ada")
    result = run_projection_job.enqueue(job.pk)
    return job, DBTaskResult.objects.get(pk=result.id)


@pytest.fixture
def worker(test_database_url, tasks_locked, audit_job):
    started = Worker(test_database_url)
    try:
        wait_for("the job to wait for the tasks table", lambda: job_waits(test_database_url))
        yield started
    finally:
        started.kill()
        print("the worker said:\n" + "".join(started.output))  # shown when a test failed


def job_waits(url: str) -> bool:
    with psycopg.connect(conninfo_of(url), autocommit=True) as db:
        row = db.execute(
            "SELECT count(*) FROM pg_stat_activity"
            " WHERE datname = current_database() AND wait_event_type = 'Lock'"
        ).fetchone()
    return bool(row and row[0])


def test_sigterm_twice_lets_the_running_job_finish(worker, tasks_locked, audit_job):
    job, result = audit_job
    worker.process.send_signal(signal.SIGTERM)
    worker.said("finishing the current job, then stopping")
    # make passes SIGTERM on, and a container stop sends it to every process: a second
    # one is the same request, not "hurry up".
    worker.process.send_signal(signal.SIGTERM)
    assert worker.process.poll() is None
    tasks_locked.rollback()  # the job can go on

    assert worker.stopped() == 0
    result.refresh_from_db()
    job.refresh_from_db()
    assert result.status == TaskResultStatus.SUCCESSFUL
    assert job.state == ProjectionJob.State.FINISHED


def test_a_second_ctrl_c_returns_the_running_job_to_the_queue(worker, tasks_locked, audit_job):
    job, result = audit_job
    worker.process.send_signal(signal.SIGINT)
    worker.said("finishing the current job, then stopping")
    worker.process.send_signal(signal.SIGINT)

    assert worker.stopped() == 1
    assert any("returned to the queue" in line for line in worker.output)
    result.refresh_from_db()
    assert result.status == TaskResultStatus.READY
    assert (result.started_at, result.finished_at, result.traceback) == (None, None, "")

    tasks_locked.rollback()  # and the next worker runs it to the end
    call_command("worker", "--batch", "--no-startup-delay", verbosity=0)
    result.refresh_from_db()
    job.refresh_from_db()
    assert result.status == TaskResultStatus.SUCCESSFUL
    assert job.state == ProjectionJob.State.FINISHED


class SignalWhileLogging(logging.Handler):
    """Sends the process one more signal from inside the first log line it sees.

    Python runs the new signal's handler right there, inside the handler that is
    logging: what happens on a loaded machine when the second Ctrl-C comes just
    after the first one's message was written.
    """

    def __init__(self, signum: int) -> None:
        super().__init__(level=logging.WARNING)
        self.signum = signum
        self.sent = False

    def emit(self, record: logging.LogRecord) -> None:
        if not self.sent:
            self.sent = True
            signal.raise_signal(self.signum)


@pytest.fixture
def signals_restored():
    """The test process's own handlers and the worker logger's level, put back after."""
    names = [signal.SIGINT, signal.SIGTERM, signal.SIGQUIT]
    handlers = {signum: signal.getsignal(signum) for signum in names}
    level = worker_logger.level
    worker_logger.setLevel(logging.INFO)  # an earlier call_command(verbosity=0) silences it
    yield
    worker_logger.setLevel(level)
    for signum, handler in handlers.items():
        signal.signal(signum, handler)


def idle_worker() -> StoppingWorker:
    return StoppingWorker(
        queue_names=["default"],
        interval=0.2,
        batch=False,
        backend_name="default",
        startup_delay=False,
        max_tasks=None,
        worker_id="in-process",
        excluded_queue_names=[],
    )


@pytest.mark.parametrize("second", [signal.SIGINT, signal.SIGQUIT])
def test_a_second_ctrl_c_inside_the_first_ones_handler_still_returns_the_job(
    signals_restored, second
):
    worker = idle_worker()
    worker.configure_signals()
    worker.running_task = True  # a job is running
    nudge = SignalWhileLogging(second)
    worker_logger.addHandler(nudge)
    try:
        with pytest.raises(JobReturned):
            signal.raise_signal(signal.SIGINT)  # its handler runs here, and the second inside
    finally:
        worker_logger.removeHandler(nudge)
    assert nudge.sent
    assert (worker.running, worker.returning) == (False, True)


def test_a_sigterm_inside_the_first_ones_handler_changes_nothing(signals_restored):
    worker = idle_worker()
    worker.configure_signals()
    worker.running_task = True
    nudge = SignalWhileLogging(signal.SIGTERM)
    worker_logger.addHandler(nudge)
    try:
        signal.raise_signal(signal.SIGTERM)
        signal.raise_signal(signal.SIGTERM)  # and after it: nothing either
    finally:
        worker_logger.removeHandler(nudge)
    assert nudge.sent
    assert (worker.running, worker.returning) == (False, False)
