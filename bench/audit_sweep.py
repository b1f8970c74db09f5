"""The projection audit over the loaded data: wall time and peak memory.

    DJANGO_SETTINGS_MODULE=bench.settings \
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/beeos_bench \
    python -m bench.audit_sweep [--chunk 2000] [--tracemalloc]

Runs ``projection_audit.sweep()`` — what ``manage.py audit_projections``
runs — over every task, message and runtime operation, and prints the wall
time, the process's peak RSS (``ru_maxrss``) before and after, the RSS sampled
along the way (memory must stay flat), the findings per category and the exit
status the command would give (0 clean, 1 problems). ``--tracemalloc`` adds a
second pass under ``tracemalloc`` for the Python heap peak; tracing makes the
sweep about four times slower (~5 min at 1M tasks), so the wall time is always
taken from the first, untraced pass.
"""

from __future__ import annotations

import argparse
import os
import resource
import time
import tracemalloc

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bench.settings")

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402

from beeos_console.projection import audit as projection_audit

TARGET_SECONDS = 120


def rss_mib() -> float:
    """Current resident set size (Linux /proc), MiB."""
    with open("/proc/self/statm") as fh:
        pages = int(fh.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def max_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def run(chunk: int, trace: bool) -> tuple[float, projection_audit.AuditReport, list[tuple]]:
    samples: list[tuple[str, float]] = []
    last = [0.0]

    def progress(line: str) -> None:
        now = time.perf_counter()
        if now - last[0] >= 2.0:
            last[0] = now
            samples.append((line, rss_mib()))

    if trace:
        tracemalloc.start()
    started = time.perf_counter()
    report = projection_audit.sweep(progress=progress, chunk=chunk)
    elapsed = time.perf_counter() - started
    return elapsed, report, samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunk", type=int, default=projection_audit.CHUNK)
    parser.add_argument("--tracemalloc", action="store_true", help="second, traced pass")
    args = parser.parse_args()

    print(f"database {settings.DATABASES['default']['NAME']}, chunk {args.chunk}")
    before_max, before_rss = max_rss_mib(), rss_mib()
    print(f"  before: RSS {before_rss:.0f} MiB, peak RSS so far {before_max:.0f} MiB")

    elapsed, report, samples = run(args.chunk, trace=False)
    after_plain = max_rss_mib()
    print(f"  sweep (no tracing): {elapsed:.1f} s, peak RSS {after_plain:.0f} MiB")
    for line, rss in samples[:: max(1, len(samples) // 12)]:
        print(f"    RSS {rss:6.0f} MiB  at {line}")

    if args.tracemalloc:
        traced, _, _ = run(args.chunk, trace=True)
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
    status = 1 if report.failing else 0
    verdict = "met" if elapsed < TARGET_SECONDS else "MISSED"
    print(f"  audit_projections would exit {status}")
    print(f"  target: under {TARGET_SECONDS} s with flat memory: {verdict} ({elapsed:.1f} s)")


if __name__ == "__main__":
    main()
