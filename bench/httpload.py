"""Shared pieces of the over-HTTP benchmarks (``bench.webhooks``, ``bench.headroom``).

No Django here: the console runs under gunicorn in its own processes, the load comes
from forked asyncio processes speaking raw keep-alive HTTP/1.1, and CPU is read from
``/proc`` (per process: gunicorn's arbiter and workers, the database's backends, any
other group of processes; and the machine as a whole).
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parent.parent
# The server's SECRET_KEY: a process that makes sessions for it signs them with this too.
SECRET_KEY = "bench-only-" + "s" * 40


# --- HTTP/1.1 over asyncio streams -------------------------------------------------------


async def read_head(reader: asyncio.StreamReader) -> tuple[int, dict[str, str]]:
    """The status and the (lower-cased) headers of one response."""
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ", 2)[1])
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return status, headers


async def read_body(reader: asyncio.StreamReader, headers: dict[str, str]) -> bytes:
    if "content-length" in headers:
        return await reader.readexactly(int(headers["content-length"]))
    if headers.get("transfer-encoding", "").lower() == "chunked":
        body = b""
        while True:
            size = int((await reader.readuntil(b"\r\n")).strip(), 16)
            chunk = await reader.readexactly(size + 2)
            if size == 0:
                return body
            body += chunk[:-2]
    raise ValueError("response without a length")


class KeepAlive:
    """One keep-alive HTTP/1.1 connection to ``url``, opened (again) when needed: after a
    failure, or after an answer that closes it."""

    ERRORS = (TimeoutError, OSError, asyncio.IncompleteReadError, ValueError)

    def __init__(self, url: str, timeout: float) -> None:
        target = urlsplit(url)
        self.hostname, self.port, self.timeout = target.hostname, target.port, timeout
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None
        self.opened = 0  # connections opened so far

    async def send(self, request: bytes) -> tuple[int, dict[str, str], bytes]:
        """The answer's status, headers and body; on one of ``ERRORS`` the connection is
        closed and the error raised."""
        try:
            if self.writer is None:
                self.reader, self.writer = await asyncio.open_connection(self.hostname, self.port)
                self.opened += 1
            self.writer.write(request)
            status, headers, body = await asyncio.wait_for(self._answer(), self.timeout)
        except self.ERRORS:
            self.close()
            raise
        if headers.get("connection", "").lower() == "close":
            self.close()
        return status, headers, body

    async def _answer(self) -> tuple[int, dict[str, str], bytes]:
        assert self.reader is not None
        status, headers = await read_head(self.reader)
        return status, headers, await read_body(self.reader, headers)

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
        self.reader = self.writer = None


def percentile(ordered: Sequence[float], q: float) -> float:
    """The ``q`` quantile of sorted seconds, in ms (NaN when there is none)."""
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000 if ordered else float("nan")


def drive(
    worker: Callable[[Any], Any],
    jobs: list[Any],
    *,
    window: tuple[float, float],
    meter: CpuMeter | None = None,
) -> tuple[list[Any], dict[str, float]]:
    """Run ``worker(job)`` in one forked process per job; meanwhile, the CPU ``meter``
    over ``window`` (``time.perf_counter`` values: the same clock in every process)."""
    with multiprocessing.get_context("fork").Pool(len(jobs)) as pool:
        pending = pool.map_async(worker, jobs)
        cpu: dict[str, float] = {}
        if meter is not None:
            time.sleep(max(0.0, window[0] - time.perf_counter()))
            before, wall = meter.sample(), time.perf_counter()
            time.sleep(max(0.0, window[1] - time.perf_counter()))
            cpu = CpuMeter.spent(before, meter.sample())
            cpu["wall_s"] = time.perf_counter() - wall
        return pending.get(), cpu


# --- CPU from /proc ----------------------------------------------------------------------


def load_average() -> str:
    return Path("/proc/loadavg").read_text().split(" ", 3)[:3].__str__()


def cpu_of(pid: int) -> float:
    """CPU seconds (user + system) a process has used so far; 0 once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def children(pid: int) -> list[int]:
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except OSError:
        return []
    return [int(x) for x in text.split()]


def postgres_backends(dbname: str) -> list[int]:
    """The PostgreSQL backends serving ``dbname`` (their titles name the database)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                title = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            except OSError:
                continue
            if title.startswith("postgres: ") and f" {dbname} " in title:
                pids.append(int(entry.name))
    return pids


def machine_busy() -> float:
    """CPU seconds the whole machine has spent busy (all cores, everything but idle)."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    user, nice, system, _idle, _iowait, irq, softirq, steal = fields
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


class CpuMeter:
    """CPU seconds used meanwhile by the server's processes (``server``), the database's
    backends (``postgres``), each extra group of processes, and with ``machine`` the whole
    machine: divided by the requests, what one costs whatever else the machine is doing."""

    def __init__(
        self,
        server: subprocess.Popen,
        groups: dict[str, Callable[[], Iterable[int]]] | None = None,
        *,
        machine: bool = False,
    ) -> None:
        self.server = server
        self.dbname = urlsplit(os.environ["DATABASE_URL"]).path.lstrip("/")
        self.groups = groups or {}
        self.machine = machine

    def sample(self) -> dict[tuple[str, int], float]:
        out = {("server", p): cpu_of(p) for p in [self.server.pid, *children(self.server.pid)]}
        out.update({("postgres", p): cpu_of(p) for p in postgres_backends(self.dbname)})
        for label, pids in self.groups.items():
            out.update({(label, p): cpu_of(p) for p in pids()})
        if self.machine:
            out[("machine", 0)] = machine_busy()
        return out

    @staticmethod
    def spent(before: dict, after: dict) -> dict[str, float]:
        """``{group}_cpu_s`` per group (``server_cpu_s``, ``postgres_cpu_s``, …)."""
        totals = {"server_cpu_s": 0.0, "postgres_cpu_s": 0.0}
        for (label, pid), value in after.items():
            key = f"{label}_cpu_s"
            totals[key] = totals.get(key, 0.0) + value - before.get((label, pid), 0.0)
        return totals


# --- gunicorn and manage.py ----------------------------------------------------------------


def server_env(*, port: int, workers: int, threads: int, **extra: str) -> dict[str, str]:
    """The console's production settings (DEBUG=0, JSON request log) without HTTPS."""
    return {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "beeos_console.settings",
        "DEBUG": "0",
        "SECRET_KEY": SECRET_KEY,
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        "SECURE_SSL_REDIRECT": "0",
        "HOST": "127.0.0.1",
        "PORT": str(port),
        "WEB_CONCURRENCY": str(workers),
        "GUNICORN_THREADS": str(threads),
        "PYTHONPATH": str(ROOT),
        **extra,
    }


def start_gunicorn(app: str, env: dict[str, str], *, port: int, log_dir: Path) -> subprocess.Popen:
    """gunicorn with ``beeos_console/gunicorn_conf.py``, once it answers ``/healthz``."""
    log = open(log_dir / f"gunicorn-{app.replace(':', '-')}.log", "ab")  # noqa: SIM115
    proc = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "-c", "beeos_console/gunicorn_conf.py", app],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=log,
    )
    url = f"http://127.0.0.1:{port}/healthz"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=2):
                return proc
        except OSError:
            if proc.poll() is not None:
                raise SystemExit(f"gunicorn exited ({proc.returncode}); see {log.name}") from None
            time.sleep(0.3)
    proc.kill()
    raise SystemExit("gunicorn did not answer /healthz within 60 s")


def stop_gunicorn(proc: subprocess.Popen) -> None:
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        proc.kill()


def manage(*argv: str, env: dict[str, str]) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "manage.py", *argv],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
