"""What one ``sync_beeos`` pass costs with N open tasks and N active operations (#16.3).

    DJANGO_SETTINGS_MODULE=bench.settings \
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/beeos_bench_sync \
    python -m bench.sync_cost [--open 10000] [--sweep 20] [--before OLD_SYNC.py]

Starts the tests' stand-in BeeOS server (real HTTP through ``beeos-sdk``), seeds N open
tasks and N active operations of one instance upstream and the very same rows in the
mirror (as a finished sync leaves them), then runs passes of ``Syncer`` and prints, per
pass, the requests the stand-in received (counted by the server, per route) and the
wall time: the catch-up pass (no operations cursor yet), a pass with nothing changed,
one after a task ended and a webhook flagged it, one after an operation on the newest
page changed, and nothing changed with the sweep off. ``--before`` runs the same
nothing-changed pass with another ``sync.py`` (e.g. ``git show HEAD~1:…/sync.py``).

It empties the mirror's task and operation tables of that database (it is created and
migrated when missing): its name must contain "sync". The load average is printed
before and after: the machine is shared.
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib.util
import os
import sys
import time
from typing import Any

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bench.settings")
# Its own database (emptied, see above), not bench.settings' default beeos_bench.
os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/beeos_bench_sync")

import django  # noqa: E402
import psycopg  # noqa: E402
from django.conf import settings  # noqa: E402

T0 = dt.datetime(2026, 11, 1, 12, 0, tzinfo=dt.UTC)
AGENT = "agent_bench"
INSTANCE = "inst_bench"


def ensure_database() -> None:
    url = os.environ["DATABASE_URL"]
    name = url.rsplit("/", 1)[1]
    if "sync" not in name:
        raise SystemExit(f"refusing to empty {name!r}: its name must contain 'sync'")
    with psycopg.connect(url.rsplit("/", 1)[0] + "/postgres", autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone():
            conn.execute(f'CREATE DATABASE "{name}"')


def load_average() -> str:
    return " ".join(f"{value:.2f}" for value in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--open", type=int, default=10_000, help="open tasks and operations")
    parser.add_argument("--sweep", type=int, default=20, help="BEEOS_SYNC_SWEEP")
    parser.add_argument("--before", metavar="FILE", help="also time this sync.py's pass")
    args = parser.parse_args()
    ensure_database()
    django.setup()

    from django.core.management import call_command
    from django.db import connection

    from beeos_console.upstream import clients
    from beeos_console.upstream.sync import Syncer
    from operations.models import RuntimeOperation, RuntimeOperationEvent
    from operations.services.rules import new_operation
    from operations.services.snapshots import parse_operation_snapshot
    from tasks.models import Artifact, Message, Task
    from tasks.services.rules import new_task
    from tasks.services.snapshots import parse_openapi_task
    from tests.standin import BeeOSStandIn
    from tests.standin.contract import wire

    call_command("migrate", verbosity=0)
    from beeos_console.upstream.models import SyncCursor

    tables = [m._meta.db_table for m in (Artifact, Message, Task, RuntimeOperationEvent)]
    tables += [RuntimeOperation._meta.db_table, SyncCursor._meta.db_table]
    with connection.cursor() as cursor:
        cursor.execute(f"TRUNCATE {', '.join(tables)} CASCADE")

    print(f"load average before: {load_average()}")
    n = args.open
    with BeeOSStandIn(api_key="oag_bench") as server:
        settings.BEEOS_API_URL, settings.BEEOS_API_KEY = server.url, "oag_bench"
        settings.BEEOS_CLOUD_URL = ""
        settings.BEEOS_INSTANCES = [INSTANCE]
        settings.BEEOS_SYNC_SWEEP = args.sweep
        started = time.monotonic()
        task_rows = [
            server.add_task(
                f"task_{i:06d}",
                agent_id=AGENT,
                status="running",
                created_at=T0 + dt.timedelta(seconds=i),
            )
            for i in range(n)
        ]
        ops = server.add_operations(n, instance_id=INSTANCE, created_at=T0)
        Task.objects.bulk_create(
            [new_task(parse_openapi_task(wire(t))) for t in task_rows], batch_size=2000
        )
        RuntimeOperation.objects.bulk_create(
            [new_operation(parse_operation_snapshot(wire(op))) for op in ops], batch_size=2000
        )
        print(
            f"seeded {n} open tasks and {n} active operations in {time.monotonic() - started:.0f} s"
        )
        client = clients.platform_client()

        def run(label: str, syncer_class: Any = Syncer) -> None:
            server.clear_requests()
            started = time.monotonic()
            report = syncer_class(client).run()
            elapsed = time.monotonic() - started
            calls = dict(sorted(server.calls.items()))
            print(
                f"| {label} | {sum(calls.values())} | "
                f"{', '.join(f'{k} {v}' for k, v in calls.items())} | {elapsed:.2f} s |"
                + (f" errors: {report.errors[:3]}" if report.failed else "")
            )

        print("| pass | requests | by route (counted by the stand-in) | wall time |")
        print("|---|---:|---|---:|")
        run("1. catch-up (no operations cursor yet)")
        run("2. nothing changed")
        server.set_task_status(f"task_{n // 2:06d}", "completed", result={"ok": True})
        Task.objects.filter(task_id=f"task_{n // 2:06d}").update(resync_requested_at=T0)
        run("3. one task ended, flagged by its webhook")
        server.set_operation_status(ops[-1].id, "runtime_committed")
        run("4. one operation on the newest page changed")
        settings.BEEOS_SYNC_SWEEP = 0
        run("5. nothing changed, sweep off")
        if args.before:
            settings.BEEOS_SYNC_SWEEP = args.sweep
            spec = importlib.util.spec_from_file_location("before_sync", args.before)
            assert spec is not None and spec.loader is not None
            before = importlib.util.module_from_spec(spec)
            sys.modules[spec.name] = before  # its dataclasses look their module up
            spec.loader.exec_module(before)
            run(f"before: nothing changed ({os.path.basename(args.before)})", before.Syncer)
    print(f"load average after: {load_average()}")


if __name__ == "__main__":
    main()
