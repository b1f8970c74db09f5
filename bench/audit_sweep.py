"""The projection audit over the loaded data: wall time and peak memory.

    DJANGO_SETTINGS_MODULE=bench.settings \
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/beeos_bench \
    python -m bench.audit_sweep [--chunk 50000] [--per-row] [--tracemalloc]

Runs ``projection_audit.sweep()`` — the set-based sweep ``manage.py
audit_projections`` and the audit page run — over every task, message and
runtime operation, and prints the wall time, the process's peak RSS
(``ru_maxrss``) before and after, the RSS sampled along the way (memory must
stay flat), the findings per category and the exit status the command would
give (0 clean, 1 problems). ``--per-row`` times the per-row reference
(``sweep_per_row``, chunks of 2,000) instead, and ``--compare`` then runs the
other one with the same chunk size and checks that the findings are equal.
``--tracemalloc`` adds a second pass under ``tracemalloc`` for the Python heap
peak; the wall time is always taken from the first, untraced pass. The load
average is printed before and after: the machine is shared, and a loaded
minute shows in every figure.
"""

from __future__ import annotations

import argparse
import os
import resource
import threading
import time
import tracemalloc

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bench.settings")

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402
from django.db import connection  # noqa: E402
from django.db.backends.signals import connection_created  # noqa: E402

from beeos_console.projection import audit as projection_audit

TARGET_SECONDS = 30


def rss_mib() -> float:
    """Current resident set size (Linux /proc), MiB."""
    with open("/proc/self/statm") as fh:
        pages = int(fh.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def max_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def load_average() -> str:
    return " ".join(f"{value:.2f}" for value in os.getloadavg())


class BackendCpu:
    """CPU time of every database backend this process opens (local PostgreSQL only).

    On a shared machine the wall time shows everyone's load; CPU time is what the
    sweep itself costs. The reading sessions' backends exit with their connection,
    so each backend's /proc/<pid>/stat is sampled every 0.2 s (the last 0.2 s of a
    session can be missed).
    """

    def __init__(self) -> None:
        self.seen: dict[int, float] = {}
        self.start: dict[int, float] = {}
        self.lock = threading.Lock()
        self.running = True
        connection_created.connect(self._created)
        self._watch(connection)
        self.thread = threading.Thread(target=self._sample, daemon=True)
        self.thread.start()

    def _created(self, sender: object, connection: object, **kwargs: object) -> None:
        self._watch(connection)

    def _watch(self, conn: object) -> None:
        with conn.cursor() as cursor:  # type: ignore[attr-defined]
            cursor.execute("SELECT pg_backend_pid()")
            pid = cursor.fetchone()[0]
        with self.lock:
            self.start.setdefault(pid, _cpu_of(pid) or 0.0)

    def _sample(self) -> None:
        while self.running:
            with self.lock:
                pids = list(self.start)
            for pid in pids:
                value = _cpu_of(pid)
                if value is not None:
                    self.seen[pid] = value
            time.sleep(0.2)

    def used(self) -> float:
        """Backend CPU seconds since ``reset``."""
        with self.lock:
            spent = [self.seen.get(pid, 0.0) - start for pid, start in self.start.items()]
        return sum(max(value, 0.0) for value in spent)

    def reset(self) -> None:
        with self.lock:
            self.start = {pid: self.seen.get(pid, start) for pid, start in self.start.items()}


def _cpu_of(pid: int) -> float | None:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def own_cpu() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    return own.ru_utime + own.ru_stime


def run(
    chunk: int, trace: bool, per_row: bool = False, workers: int = projection_audit.WORKERS
) -> tuple[float, projection_audit.AuditReport, list[tuple]]:
    samples: list[tuple[str, float]] = []
    last = [0.0]

    def progress(line: str) -> None:
        now = time.perf_counter()
        if now - last[0] >= 2.0:
            last[0] = now
            samples.append((line, rss_mib()))

    if trace:
        tracemalloc.start()
    backends = BackendCpu()
    time.sleep(0.3)
    backends.reset()
    own_before = own_cpu()
    started = time.perf_counter()
    if per_row:
        report = projection_audit.sweep_per_row(progress=progress, chunk=chunk)
    else:
        report = projection_audit.sweep(progress=progress, chunk=chunk, workers=workers)
    elapsed = time.perf_counter() - started
    own = own_cpu() - own_before
    time.sleep(0.3)
    backends.running = False
    connection_created.disconnect(backends._created)
    print(
        f"  CPU time: this process {own:.1f} s, its database backends {backends.used():.1f} s "
        f"({len(backends.start)} sessions)"
    )
    return elapsed, report, samples


def comparable(report: projection_audit.AuditReport) -> dict:
    data = report.to_json()
    del data["started_at"], data["finished_at"]
    return data


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunk", type=int, help="rows per chunk (default: the sweep's own)")
    parser.add_argument("--per-row", action="store_true", help="time the per-row reference")
    parser.add_argument(
        "--workers",
        type=int,
        default=projection_audit.WORKERS,
        help="database sessions the set-based sweep reads with",
    )
    parser.add_argument(
        "--compare", action="store_true", help="then run the other one and compare findings"
    )
    parser.add_argument("--tracemalloc", action="store_true", help="second, traced pass")
    args = parser.parse_args()
    default = projection_audit.CHUNK if args.per_row else projection_audit.SET_CHUNK
    chunk = args.chunk or default
    which = "per-row reference" if args.per_row else f"set-based sweep, {args.workers} sessions"

    print(f"database {settings.DATABASES['default']['NAME']}, {which}, chunk {chunk:,}")
    print(f"  load average before: {load_average()}")
    before_max, before_rss = max_rss_mib(), rss_mib()
    print(f"  before: RSS {before_rss:.0f} MiB, peak RSS so far {before_max:.0f} MiB")

    elapsed, report, samples = run(chunk, False, args.per_row, args.workers)
    after_plain = max_rss_mib()
    print(f"  sweep (no tracing): {elapsed:.1f} s, peak RSS {after_plain:.0f} MiB")
    print(f"  load average after: {load_average()}")
    for line, rss in samples[:: max(1, len(samples) // 12)]:
        print(f"    RSS {rss:6.0f} MiB  at {line}")

    if args.tracemalloc:
        traced, _, _ = run(chunk, True, args.per_row, args.workers)
        current, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        print(
            f"  sweep under tracemalloc: {traced:.1f} s, Python heap peak {peak / 2**20:.1f} MiB"
            f" (still held at the end: {current / 2**20:.1f} MiB)"
        )
    print(f"  peak RSS after: {max_rss_mib():.0f} MiB (+{max_rss_mib() - before_max:.0f} MiB)")

    scanned = ", ".join(f"{v:,} {k}" for k, v in report.scanned.items())
    print(f"  scanned {scanned}")
    for _name, label, count, failing in report.summary_rows():
        mark = ("FAIL" if count else "ok  ") if failing else "note"
        print(f"    {mark} {label}: {count:,}")
    for group in report.to_json()["unmapped_groups"][:10]:
        print(
            f"    unmapped {group['kind']}/{group['protocol']} {group['raw_value']!r}: "
            f"{group['count']:,}"
        )
    if args.compare:
        # The same chunk: then the two agree finding for finding, order included.
        other, theirs, _ = run(chunk, False, not args.per_row, args.workers)
        same = comparable(theirs) == comparable(report)
        print(f"  the other sweep: {other:.1f} s; same findings: {'yes' if same else 'NO'}")
    status = 1 if report.failing else 0
    verdict = "met" if elapsed < TARGET_SECONDS else "MISSED"
    print(f"  audit_projections would exit {status}")
    print(f"  target: under {TARGET_SECONDS} s with flat memory: {verdict} ({elapsed:.1f} s)")


if __name__ == "__main__":
    main()
