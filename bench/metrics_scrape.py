"""Time a /metrics scrape on the loaded data: the whole scrape and each database source.

    DJANGO_SETTINGS_MODULE=bench.settings \
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/beeos_bench \
    python -m bench.metrics_scrape [--repeat 30] [--cancels 100000] [--explain]

``bench.load`` makes no cancel requests and no audit job; ``--cancels N`` first adds
N ended cancel requests over the loaded month (two fifths of them uncertain and
still open: more than the count cap), and a finished audit
job whose report has every category with 50 examples (idempotent: it replaces what an
earlier run added). Every scrape goes through Django's test ``Client`` with the bearer
token (the whole middleware stack), in this process, as ``bench.run`` does.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bench.settings")
os.environ.setdefault("METRICS_TOKEN", "bench-metrics-" + "m" * 40)

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402
from django.db import connection, transaction  # noqa: E402
from django.test import Client  # noqa: E402
from django.test.utils import CaptureQueriesContext  # noqa: E402
from prometheus_client.parser import text_string_to_metric_families  # noqa: E402

from beeos_console.cancels.models import CancelRequest  # noqa: E402
from beeos_console.projection.audit import EXAMPLES, FAILING, INFORMATIONAL  # noqa: E402
from beeos_console.projection.models import ProjectionJob  # noqa: E402

BENCH_USER = "bench-metrics"


def add_cancels(n: int) -> None:
    table = CancelRequest._meta.db_table
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM {table} WHERE requested_by = %s", [BENCH_USER])
        cursor.execute(
            f"""
            INSERT INTO {table} (idempotency_key, object_kind, protocol, object_id,
                requested_by, reason, gateway, state, result, message, upstream, checks,
                created_at, finished_at, next_check_at, resolution)
            SELECT 'bench-metrics-' || i, 'task', 'openapi', 'tsk_bench_' || i, %s, 'bench',
                (ARRAY['beeos', 'local'])[1 + i %% 2],
                (ARRAY['accepted', 'refused', 'uncertain', 'not_sent', 'uncertain'])[1 + i %% 5],
                (ARRAY['cancel_requested', 'refused', 'uncertain', 'not_sent',
                       'uncertain'])[1 + i %% 5],
                '', '{{}}', 0, t, t + interval '1 second',
                CASE WHEN i %% 5 IN (2, 4) THEN t + interval '1 minute' END, ''
            FROM generate_series(1, %s) AS i,
                 LATERAL (SELECT now() - (i %% 43200) * interval '1 minute' AS t) AS times
            """,
            [BENCH_USER, n],
        )
    report = {
        "failing": True,
        "categories": {
            name: {
                "count": 1000 + i,
                "examples": [{"id": f"tsk_{j}", "raw": "x" * 40} for j in range(EXAMPLES)],
            }
            for i, name in enumerate([*FAILING, *INFORMATIONAL])
        },
    }
    ProjectionJob.objects.filter(requested_by=BENCH_USER).delete()
    ProjectionJob.objects.create(
        kind="audit", state="finished", requested_by=BENCH_USER, report=report
    )
    with connection.cursor() as cursor:
        cursor.execute(f"VACUUM ANALYZE {table}")


def scrape(client: Client) -> tuple[float, dict]:
    started = time.perf_counter()
    response = client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {settings.METRICS_TOKEN}")
    elapsed = (time.perf_counter() - started) * 1000
    assert response.status_code == 200, response.status_code
    families = {f.name: f for f in text_string_to_metric_families(response.content.decode())}
    return elapsed, families


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--cancels", type=int, default=0)
    parser.add_argument("--explain", action="store_true")
    args = parser.parse_args()
    if args.cancels:
        started = time.perf_counter()
        add_cancels(args.cancels)
        print(f"added {args.cancels:,} cancel requests in {time.perf_counter() - started:.1f} s")
    client = Client()
    scrape(client)  # warm up
    totals, per_source = [], {}
    for _ in range(args.repeat):
        elapsed, families = scrape(client)
        totals.append(elapsed)
        for sample in families["beeos_console_metrics_source_duration_seconds"].samples:
            per_source.setdefault(sample.labels["source"], []).append(sample.value * 1000)
    baseline = []  # the same client on /healthz (no database): this minute's floor
    for _ in range(args.repeat):
        started = time.perf_counter()
        client.get("/healthz")
        baseline.append((time.perf_counter() - started) * 1000)
    with CaptureQueriesContext(connection) as ctx:
        _, families = scrape(client)
    unbounded = [
        q["sql"]
        for q in ctx.captured_queries
        if "COUNT(" in q["sql"].upper() and "LIMIT" not in q["sql"].upper()
    ]
    totals.sort()
    print(
        f"scrape: median {statistics.median(totals):.1f} ms, "
        f"p90 {totals[int(len(totals) * 0.9) - 1]:.1f} ms over {args.repeat}; "
        f"{len(ctx.captured_queries)} queries; unbounded COUNTs: {len(unbounded)}"
    )
    print(f"  /healthz (baseline) median {statistics.median(baseline):.1f} ms")
    for name, ms in per_source.items():
        print(f"  {name:<18} median {statistics.median(ms):7.2f} ms   max {max(ms):7.2f} ms")
    tasks = {s.labels["status"]: s.value for s in families["beeos_console_tasks"].samples}
    print(f"  (tasks by status: {tasks})")
    if args.explain:
        with connection.cursor() as cursor:
            for query in ctx.captured_queries:
                print("\n" + query["sql"])
                cursor.execute("EXPLAIN (ANALYZE, BUFFERS) " + query["sql"])
                print("\n".join(row[0] for row in cursor.fetchall()))


if __name__ == "__main__":
    main()
