"""Time the agents list and agent pages on the loaded data (1M tasks / 500 agents).

    DJANGO_SETTINGS_MODULE=bench.settings \
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/beeos_bench_agents \
    python -m bench.agents [--repeat 30] [--explain]

Every request goes through Django's test ``Client`` (the whole middleware stack,
session authentication) in this process, as ``bench.run`` does. Agent pages are
timed for the busiest agents, a middling one and a quiet one (by their maintained
counts), in every delegation window. Target: ≤ 30 ms median per page.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from urllib.parse import quote

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bench.settings")

import django  # noqa: E402

django.setup()

from django.contrib.auth.models import User  # noqa: E402
from django.db import connection  # noqa: E402
from django.test import Client  # noqa: E402
from django.test.utils import CaptureQueriesContext  # noqa: E402

from beeos_console.mirror.models import AgentCount  # noqa: E402
from bench.load import ADMIN_USER  # noqa: E402

TARGET_MS = 30.0


def picked_agents() -> list[str]:
    """The busiest agent, one in the middle and the quietest (any-role counts)."""
    rows = list(
        AgentCount.objects.filter(role="")
        .order_by("-count", "agent_id")
        .values_list("agent_id", flat=True)
    )
    if not rows:
        sys.exit("no agents: run bench.load first")
    return [rows[0], rows[len(rows) // 2], rows[-1]]


def cases() -> list[tuple[str, str]]:
    found = [
        # Not an agents page: the task list, to read the figures against on a busy machine.
        ("reference: task list", "/tasks/"),
        ("list", "/agents/"),
        ("list, by id", "/agents/?sort=agent"),
        ("list, id contains", "/agents/?q=01"),
        ("list, active 24 h", "/agents/?active_within=24h"),
        ("list, has stuck work", "/agents/?stuck=true"),
    ]
    for rank, agent in zip(("busiest", "middle", "quietest"), picked_agents(), strict=True):
        for window in ("24h", "7d", "30d"):
            found.append(
                (
                    f"agent page ({rank}, {window})",
                    f"/agents/{quote(agent, safe='')}/?window={window}",
                )
            )
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--explain", action="store_true")
    args = parser.parse_args()
    client = Client()
    client.force_login(User.objects.get(username=ADMIN_USER))
    print(f"{'page':42} {'median':>8} {'p95':>8} {'queries':>8}")
    worst = 0.0
    for name, url in cases():
        client.get(url)  # warm up
        timings = []
        for _ in range(args.repeat):
            start = time.perf_counter()
            response = client.get(url)
            timings.append((time.perf_counter() - start) * 1000)
            assert response.status_code == 200, (url, response.status_code)
        with CaptureQueriesContext(connection) as ctx:
            client.get(url)
        median = statistics.median(timings)
        p95 = sorted(timings)[int(len(timings) * 0.95) - 1]
        worst = max(worst, median)
        print(f"{name:42} {median:8.1f} {p95:8.1f} {len(ctx.captured_queries):8d}")
        if args.explain:
            for query in ctx.captured_queries:
                print("   ", query["time"], query["sql"][:160])
    verdict = "OK" if worst <= TARGET_MS else "OVER"
    print(f"worst median {worst:.1f} ms, target ≤ {TARGET_MS:.0f} ms: {verdict}")


if __name__ == "__main__":
    main()
