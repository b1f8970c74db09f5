"""Time the console's pages against the stock Django admin, on the same data, in one run.

    DJANGO_SETTINGS_MODULE=bench.settings \
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/beeos_bench \
    python -m bench.run [--repeat 30] [--explain] [--explain-admin] [--json results.json]

Every request goes through Django's test ``Client`` (the whole middleware
stack, session authentication included) in this process: the figures are
request-to-response times of the app and the database, without an HTTP server.
Each page is warmed up, then requested ``--repeat`` times, round-robin with its
stock-admin counterparts (so a change in background load hits both sides
alike); the table gives the median and 90th percentile, the number of SQL
queries (measured on one more request with ``CaptureQueriesContext``) and the
stock admin / console ratio.

``--explain`` prints ``EXPLAIN (ANALYZE, BUFFERS)`` of every query a console
page runs against the big tables (the SQL is captured, then re-run).
"""

from __future__ import annotations

import argparse
import datetime as dt
import html
import json
import os
import re
import statistics
import sys
import time
from dataclasses import asdict, dataclass, field
from urllib.parse import quote

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bench.settings")

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402
from django.contrib.auth.models import User  # noqa: E402
from django.db import connection  # noqa: E402
from django.test import Client  # noqa: E402
from django.test.utils import CaptureQueriesContext  # noqa: E402

from bench.load import ADMIN_USER, DETAIL_TASK_ID  # noqa: E402
from tasks.models import Task  # noqa: E402

LIST_TARGET_MS = 15.0
DETAIL_TARGET_MS = 60.0
DEEP_FACTOR = 1.5
MIN_RATIO = 10.0
DEEP_CLICKS = 50
BIG_TABLES = (
    "tasks_task",
    "tasks_message",
    "operations_runtimeoperation",
    "operations_runtimeoperationevent",
    "console_statuscount",
)
NEXT_LINK = re.compile(r'<a href="([^"]+)"[^>]*rel="next"')


@dataclass
class Timing:
    url: str
    median_ms: float
    p90_ms: float
    queries: int
    unbounded_counts: int
    status: int
    samples_ms: list[float] = field(default_factory=list)


@dataclass
class Row:
    name: str
    console: Timing
    target_ms: float | None
    admin: list[tuple[str, Timing]] = field(default_factory=list)

    @property
    def ratios(self) -> list[float]:
        return [t.median_ms / self.console.median_ms for _, t in self.admin]


def p90(samples: list[float]) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(0.9 * (len(ordered) - 1)))]


def measure(client: Client, urls: list[str], repeat: int, warmup: int = 3) -> list[Timing]:
    """Time ``urls`` round-robin (console, admin, console, admin, …).

    Interleaving keeps a drift in background load from favouring either side of
    a comparison. Query counts come from one more request per URL, captured.
    """
    for url in urls:
        for _ in range(warmup):
            response = client.get(url)
            if response.status_code != 200:
                sys.exit(f"{url} answered {response.status_code}")
    samples: dict[str, list[float]] = {url: [] for url in urls}
    for _ in range(repeat):
        for url in urls:
            started = time.perf_counter()
            client.get(url)
            samples[url].append((time.perf_counter() - started) * 1000)
    timings = []
    for url in urls:
        with CaptureQueriesContext(connection) as ctx:
            response = client.get(url)
        unbounded = sum(
            1
            for q in ctx.captured_queries
            if "COUNT(" in q["sql"].upper() and "LIMIT" not in q["sql"].upper()
        )
        timings.append(
            Timing(
                url=url,
                median_ms=statistics.median(samples[url]),
                p90_ms=p90(samples[url]),
                queries=len(ctx.captured_queries),
                unbounded_counts=unbounded,
                status=response.status_code,
                samples_ms=[round(v, 2) for v in samples[url]],
            )
        )
    return timings


def follow_next(client: Client, url: str, clicks: int) -> str:
    """Click "Older →" ``clicks`` times; return the URL of the page reached."""
    for _ in range(clicks):
        body = client.get(url).content.decode()
        match = NEXT_LINK.search(body)
        if not match:
            sys.exit(f"no 'Older →' link on {url}")
        url = html.unescape(match.group(1))
    return url


def explain(client: Client, url: str) -> None:
    with CaptureQueriesContext(connection) as ctx:
        client.get(url)
    print(f"\n=== EXPLAIN {url}")
    for q in ctx.captured_queries:
        sql = q["sql"]
        if not any(f'"{t}"' in sql or f" {t} " in sql for t in BIG_TABLES):
            continue
        print(f"\n-- {sql[:400]}{' …' if len(sql) > 400 else ''}")
        with connection.cursor() as cursor:
            cursor.execute(f"EXPLAIN (ANALYZE, BUFFERS) {sql}")
            for (line,) in cursor.fetchall():
                print("   " + line)


def cpu_probe() -> float:
    """A fixed pure-Python loop, ms: how fast this (shared, virtual) CPU is right now."""
    started = time.perf_counter()
    total = 0
    for i in range(1_000_000):
        total += i * i
    return (time.perf_counter() - started) * 1000


def pick_agent() -> str:
    """A typical agent: the one of a task in the middle of the table (median-ish volume)."""
    middle = Task.objects.order_by("-created_at", "-id").only("agent_id")[500_000:500_001]
    row = list(middle) or list(Task.objects.order_by("-created_at").only("agent_id")[:1])
    return row[0].agent_id


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--explain", action="store_true")
    parser.add_argument(
        "--explain-admin", action="store_true", help="EXPLAIN the stock admin's queries too"
    )
    parser.add_argument("--json", help="also write the figures to this file")
    parser.add_argument(
        "--only", help="comma-separated substrings: time only the pages whose name matches"
    )
    args = parser.parse_args()

    user = User.objects.get(username=ADMIN_USER)
    client = Client()
    client.force_login(user)
    n_tasks = Task.objects.order_by("-id").values_list("id", flat=True).first() or 0
    agent = pick_agent()
    # The console's stuck=60 as a plain lookup the stock admin accepts from the URL.
    cutoff = quote((dt.datetime.now(dt.UTC) - dt.timedelta(minutes=60)).isoformat())
    admin_tasks = "/stock-admin/tasks/task/"
    admin_ops = "/stock-admin/operations/runtimeoperation/"

    with connection.cursor() as cursor:
        cursor.execute("SHOW server_version")
        pg = cursor.fetchone()[0]
    print(
        f"database {settings.DATABASES['default']['NAME']} (PostgreSQL {pg}), ~{n_tasks:,} tasks, "
        f"agent {agent}; {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}; "
        f"{args.repeat} timed requests per page; CPU probe {cpu_probe():.0f} ms"
    )
    first_deep = follow_next(client, "/tasks/", DEEP_CLICKS)

    pages: list[tuple[str, str, float | None, list[tuple[str, str]]]] = [
        ("tasks: unfiltered", "/tasks/", LIST_TARGET_MS, [("admin", admin_tasks)]),
        (
            "tasks: status=failed",
            "/tasks/?status=failed",
            LIST_TARGET_MS,
            [("admin", f"{admin_tasks}?status__exact=failed")],
        ),
        (
            "tasks: processing & stuck 60 min",
            "/tasks/?status=processing&stuck=60",
            LIST_TARGET_MS,
            [("admin", f"{admin_tasks}?status__exact=processing&updated_at__lt={cutoff}")],
        ),
        (
            "tasks: one agent",
            f"/tasks/?agent_id={agent}",
            LIST_TARGET_MS,
            [("admin", f"{admin_tasks}?agent_id={agent}")],
        ),
        (
            f"tasks: deep page ({DEEP_CLICKS} x Older)",
            first_deep,
            LIST_TARGET_MS,
            [("admin p=50", f"{admin_tasks}?p=50"), ("admin p=1000", f"{admin_tasks}?p=1000")],
        ),
        (
            "tasks: status + protocol",
            "/tasks/?status=failed&protocol=openapi",
            LIST_TARGET_MS,
            [
                (
                    "admin 2 filters",
                    "/stock-admin2/tasks/task/?status__exact=failed&protocol__exact=openapi",
                )
            ],
        ),
        (
            "task detail, 1,000 messages",
            f"/tasks/{DETAIL_TASK_ID}/",
            DETAIL_TARGET_MS,
            [],
        ),
        ("operations: unfiltered", "/operations/", LIST_TARGET_MS, [("admin", admin_ops)]),
        (
            "operations: raw_status=outcome_unknown",
            "/operations/?raw_status=outcome_unknown",
            LIST_TARGET_MS,
            [("admin", f"{admin_ops}?raw_status=outcome_unknown")],
        ),
        (
            "messages: unfiltered",
            "/messages/",
            LIST_TARGET_MS,
            [("admin", "/stock-admin/tasks/message/")],
        ),
        ("dashboard", "/", None, []),
    ]
    if args.only:
        wanted = [w.strip() for w in args.only.split(",")]
        pages = [p for p in pages if any(w in p[0] for w in wanted)]

    rows: list[Row] = []
    for name, url, target, admin_pages in pages:
        print(f"timing {name} …", flush=True)
        console, *admin = measure(client, [url, *(u for _, u in admin_pages)], args.repeat)
        row = Row(name, console, target)
        row.admin = [(label, t) for (label, _), t in zip(admin_pages, admin, strict=True)]
        rows.append(row)

    report(rows)
    print(f"CPU probe at the end: {cpu_probe():.0f} ms (same loop as at the start)")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(
                [
                    {
                        "name": r.name,
                        "target_ms": r.target_ms,
                        "console": asdict(r.console),
                        "admin": [{"label": label, **asdict(t)} for label, t in r.admin],
                    }
                    for r in rows
                ],
                fh,
                indent=2,
            )
    if args.explain or args.explain_admin:
        for row in rows:
            if args.explain:
                explain(client, row.console.url)
            if args.explain_admin:
                for _, timing in row.admin:
                    explain(client, timing.url)


def report(rows: list[Row]) -> None:
    head = (
        f"{'page':42} {'console med':>11} {'p90':>7} {'q':>3}  "
        f"{'stock admin':28} {'med':>8} {'p90':>8} {'q':>3} {'ratio':>6}  verdict"
    )
    print("\n" + head)
    print("-" * len(head))
    first = next((r for r in rows if r.name == "tasks: unfiltered"), None)
    missed = []
    for row in rows:
        c = row.console
        verdicts = []
        if row.target_ms is not None:
            ok = c.median_ms <= row.target_ms
            verdicts.append(f"{'met' if ok else 'MISSED'} <= {row.target_ms:.0f} ms")
            if not ok:
                missed.append(f"{row.name}: {c.median_ms:.1f} ms > {row.target_ms:.0f} ms")
        if row.name.startswith("tasks: deep") and first:
            factor = c.median_ms / first.console.median_ms
            ok = factor <= DEEP_FACTOR
            verdicts.append(f"{'met' if ok else 'MISSED'} {factor:.2f}x first page")
            if not ok:
                missed.append(f"{row.name}: {factor:.2f}x the first page")
        if c.unbounded_counts:
            verdicts.append(f"{c.unbounded_counts} UNBOUNDED COUNT")
            missed.append(f"{row.name}: unbounded COUNT")
        admin = row.admin or [("—", None)]
        for i, (label, t) in enumerate(admin):
            left = (
                f"{row.name:42} {c.median_ms:9.1f}ms {c.p90_ms:6.1f} {c.queries:3}  "
                if i == 0
                else " " * 69
            )
            if t is None:
                print(f"{left}{'—':28} {'':>8} {'':>8} {'':>3} {'':>6}  {'; '.join(verdicts)}")
                continue
            ratio = t.median_ms / c.median_ms
            v = f"{'met' if ratio >= MIN_RATIO else 'MISSED'} >= {MIN_RATIO:.0f}x"
            if ratio < MIN_RATIO:
                missed.append(f"{row.name} vs {label}: only {ratio:.1f}x")
            verdict = "; ".join([*verdicts, v]) if i == 0 else v
            print(
                f"{left}{label:28} {t.median_ms:6.1f}ms {t.p90_ms:8.1f} {t.queries:3} "
                f"{ratio:5.1f}x  {verdict}"
            )
    print()
    if missed:
        print("MISSED targets:")
        for m in missed:
            print(f"  - {m}")
    else:
        print("All page targets met.")


if __name__ == "__main__":
    main()
