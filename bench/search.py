"""Time the header search box (#14) on the loaded data: id fragments and full text.

    DJANGO_SETTINGS_MODULE=bench.settings \
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/beeos_bench \
    python -m bench.search [--repeat 30] [--explain] [--json results.json]

Every request goes through Django's test ``Client`` (the whole middleware stack,
session authentication) in this process, as ``bench.run`` does. The fragments
are taken from rows picked at random in the loaded data (a fixed seed): the
start, middle and end of ids, so the figures do not depend on a lucky id.
Targets: an id-fragment search ≤ 50 ms median, a full-text search ≤ 150 ms.
``--explain`` prints ``EXPLAIN (ANALYZE, BUFFERS)`` of every query one request runs.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import time
from urllib.parse import urlencode

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bench.settings")

import django  # noqa: E402

django.setup()

from django.contrib.auth.models import User  # noqa: E402
from django.db import connection  # noqa: E402
from django.test import Client  # noqa: E402
from django.test.utils import CaptureQueriesContext  # noqa: E402

from bench.load import ADMIN_USER  # noqa: E402

FRAGMENT_TARGET_MS = 50.0
TEXT_TARGET_MS = 150.0
SAMPLES = 10  # different ids per case, cycled through the repeats


def sample(sql: str, n: int, rng: random.Random) -> list[str]:
    """``n`` values of ``sql``'s one column, rows picked by random primary keys."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT max(id) FROM ({sql}) s")  # noqa: S608 - our constant SQL
        top = cursor.fetchone()[0]
        values: list[str] = []
        while len(values) < n:
            cursor.execute(
                f"SELECT v FROM ({sql}) s WHERE id >= %s ORDER BY id LIMIT 1", [rng.randint(1, top)]
            )  # noqa: S608,E501
            row = cursor.fetchone()
            if row and row[0]:
                values.append(row[0])
    return values


def cases(rng: random.Random) -> list[tuple[str, str, float, list[str]]]:
    """(name, kind, target, queries) — ``queries`` cycled through the timed requests."""
    tasks = sample(
        "SELECT id, task_id AS v FROM tasks_task WHERE protocol = 'openapi'", SAMPLES, rng
    )
    a2a = sample("SELECT id, task_id AS v FROM tasks_task WHERE protocol = 'a2a'", SAMPLES, rng)
    ops = sample("SELECT id, operation_id AS v FROM operations_runtimeoperation", SAMPLES, rng)
    msgs = sample(
        "SELECT id, message_id AS v FROM tasks_message WHERE source = 'envelope'", SAMPLES, rng
    )
    ctxs = sample("SELECT id, context_id AS v FROM tasks_task WHERE context_id <> ''", SAMPLES, rng)
    pks = [str(rng.randint(1, 1_000_000)) for _ in range(SAMPLES)]
    agents = sample("SELECT id, agent_id AS v FROM tasks_task", SAMPLES, rng)
    return [
        ("task id: start (12 chars)", "fragment", FRAGMENT_TARGET_MS, [t[:12] for t in tasks]),
        ("task id: middle (8 chars)", "fragment", FRAGMENT_TARGET_MS, [t[6:14] for t in tasks]),
        ("task id: end (8 chars)", "fragment", FRAGMENT_TARGET_MS, [t[-8:] for t in tasks]),
        ("A2A task id: middle (10)", "fragment", FRAGMENT_TARGET_MS, [t[9:19] for t in a2a]),
        ("operation id: end (8)", "fragment", FRAGMENT_TARGET_MS, [o[-8:] for o in ops]),
        ("message id: whole", "fragment", FRAGMENT_TARGET_MS, msgs),
        ("message id: middle (8)", "fragment", FRAGMENT_TARGET_MS, [m[6:14] for m in msgs]),
        ("context id: middle (8)", "fragment", FRAGMENT_TARGET_MS, [c[6:14] for c in ctxs]),
        ("whole task id", "fragment", FRAGMENT_TARGET_MS, tasks),
        (
            "BeeOS task URL",
            "url",
            FRAGMENT_TARGET_MS,
            [f"https://api.beeos.example/api/v1/agents/agt_0001/tasks/{t}" for t in tasks],
        ),
        # Agents (#14): the bench has 500 agent ids `agt_0000`…`agt_0499`.
        (
            "agent id: end (`_0123`, 1 agent)",
            "fragment",
            FRAGMENT_TARGET_MS,
            [a[3:] for a in agents],
        ),
        ("agent id: `agt_01` (100 agents)", "fragment", FRAGMENT_TARGET_MS, ["agt_01"]),
        ("agent id: `agt` (all 500)", "fragment", FRAGMENT_TARGET_MS, ["agt"]),
        ("text: `ticket <n>` (rare)", "text", TEXT_TARGET_MS, [f"ticket {p}" for p in pks]),
        ("text: `order history` (1M hits)", "text", TEXT_TARGET_MS, ["order history"]),
        ("text: `timeout` (task errors)", "text", TEXT_TARGET_MS, ["timeout"]),
        ('text: `"handle ticket" -me`', "text", TEXT_TARGET_MS, ['"handle ticket" -me']),
        ('text: `"ticket handle"` (0 hits)', "text", TEXT_TARGET_MS, ['"ticket handle"']),
        ("text: `-me` alone", "text", TEXT_TARGET_MS, ["-me"]),
        ("text: no match", "text", TEXT_TARGET_MS, ["zebra"]),
    ]


def explain(sql: str, params) -> str:
    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN (ANALYZE, BUFFERS) {sql}", params)
        return "\n".join(row[0] for row in cursor.fetchall())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--explain", action="store_true")
    parser.add_argument("--json", help="write the figures to this file")
    parser.add_argument("--seed", type=int, default=14)
    args = parser.parse_args()

    client = Client()
    client.force_login(User.objects.get(username=ADMIN_USER))
    rng = random.Random(args.seed)
    results = []
    print(f"{'case':34} {'median':>8} {'p90':>8} {'queries':>7}  answer  target")
    for name, kind, target, queries in cases(rng):
        urls = ["/search/?" + urlencode({"q": text}) for text in queries]
        for url in urls[:3]:
            client.get(url)  # warm up
        samples = []
        answers = set()
        for i in range(args.repeat):
            url = urls[i % len(urls)]
            started = time.perf_counter()
            response = client.get(url)
            samples.append((time.perf_counter() - started) * 1000)
            answers.add(response.status_code)
        with CaptureQueriesContext(connection) as ctx:
            client.get(urls[0])
        median = statistics.median(samples)
        p90 = sorted(samples)[min(len(samples) - 1, round(0.9 * (len(samples) - 1)))]
        met = "met" if median <= target else "MISSED"
        answer = "/".join(str(a) for a in sorted(answers))
        print(
            f"{name:34} {median:7.1f}ms {p90:7.1f}ms {len(ctx.captured_queries):7}  "
            f"{answer:6}  ≤ {target:.0f} ms {met}"
        )
        results.append(
            {
                "case": name,
                "kind": kind,
                "median_ms": round(median, 2),
                "p90_ms": round(p90, 2),
                "queries": len(ctx.captured_queries),
                "answers": sorted(answers),
                "target_ms": target,
                "example": urls[0],
            }
        )
        if args.explain:
            print(f"--- {urls[0]}")
            for query in ctx.captured_queries:
                if "tasks_" in query["sql"] or "operations_" in query["sql"]:
                    print(query["sql"][:300])
                    print(explain(query["sql"], None))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(results, fh, indent=2)
    missed = [r["case"] for r in results if r["median_ms"] > r["target_ms"]]
    sys.exit(1 if missed else 0)


if __name__ == "__main__":
    main()
