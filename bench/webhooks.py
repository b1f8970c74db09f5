"""Webhooks over real HTTP: events/s the receiver acknowledges under gunicorn, the backlog
drain rate of ``apply_webhooks``, and the bare floor (a trivial WSGI app, same settings).

    export DATABASE_URL=postgres://postgres@127.0.0.1:5432/beeos_bench_webhooks
    .venv/bin/python -m bench.webhooks --fresh --seconds 60 --rate 1000
    .venv/bin/python -m bench.webhooks --seconds 60 --rate 0       # as fast as it goes

Steps: (``--fresh``) drop, recreate and migrate the database (its name must contain
"bench"); start the console under gunicorn with ``beeos_console/gunicorn_conf.py``
(``WEB_CONCURRENCY`` workers x ``GUNICORN_THREADS`` threads, production settings:
DEBUG=0, JSON request log); send signed ``task_status`` events from ``--procs``
processes over ``--connections`` keep-alive connections in all (asyncio, raw
HTTP/1.1), a few seconds of warm-up, then ``--seconds`` measured; stop gunicorn;
drain the backlog with ``--drain-workers`` concurrent ``manage.py apply_webhooks``
processes and time it; then the same load against ``floor_app`` below under the
same gunicorn settings.

Each task gets its lifecycle as three events (queued, running, completed) on one
connection, in order: the drain creates a third of the tasks' rows and moves the
rest with an audited state change, as real traffic would.

``--rate R``: an open loop, R events/s in all, each connection on its own
schedule; latency counts from the scheduled send time (a late send is not
hidden: no coordinated omission). ``--rate 0``: a closed loop, each connection
sends its next event as soon as the last is answered.

Not a test: nothing here asserts a timing. Figures go to bench/README.md with the
command that produced them.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import hmac
import json
import os
import re
import resource
import statistics
import subprocess
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from bench.httpload import (
    ROOT,
    CpuMeter,
    KeepAlive,
    cpu_of,
    drive,
    load_average,
    manage,
    percentile,
    postgres_backends,
    start_gunicorn,
    stop_gunicorn,
)
from bench.httpload import server_env as base_env

SECRET = "whsec_bench_" + "b" * 40
PATH = "/api/v1/webhooks/beeos/"
WARMUP_SECONDS = 3.0
LIFECYCLE = ("queued", "running", "completed")


def floor_app(environ: dict[str, Any], start_response: Any) -> list[bytes]:
    """The bare floor: reads the body, answers a small JSON 200; no Django, no database."""
    length = int(environ.get("CONTENT_LENGTH") or 0)
    environ["wsgi.input"].read(length)
    body = b'{"result": "queued"}'
    start_response(
        "200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))]
    )
    return [body]


# --- the load generator ---------------------------------------------------------------


def event_request(host: str, task_id: str, status: str, stamp: datetime) -> bytes:
    body = json.dumps(
        {
            "type": "task_status",
            "task_id": task_id,
            "context_id": task_id,
            "status": status,
            "final": status == "completed",
            "timestamp": stamp.isoformat().replace("+00:00", "Z"),
        },
        separators=(",", ":"),
    ).encode()
    ts = str(int(time.time()))
    mac = hmac.new(SECRET.encode(), ts.encode() + b"." + body, hashlib.sha256).hexdigest()
    head = (
        f"POST {PATH} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\nX-BeeOS-Signature: t={ts},v1={mac}\r\n\r\n"
    )
    return head.encode() + body


async def connection_loop(
    url: str, conn_no: int, conns: int, run: str, rate: float, start: float, stop: float
) -> dict[str, Any]:
    target = urlsplit(url)
    host = f"{target.hostname}:{target.port}"
    out: dict[str, Any] = {"lat": [], "errors": Counter(), "results": Counter()}
    interval = conns / rate if rate > 0 else 0.0
    conn = KeepAlive(url, 30)
    k = 0
    base = datetime.now(UTC).replace(microsecond=0)
    while True:
        scheduled = start + k * interval if interval else time.perf_counter()
        now = time.perf_counter()
        if scheduled >= stop or now >= stop:
            break
        if scheduled > now:
            await asyncio.sleep(scheduled - now)
        task_no, step = divmod(k, len(LIFECYCLE))
        task_id = f"tsk_wh_{run}_{conn_no:03d}_{task_no:07d}"
        stamp = base + timedelta(seconds=task_no % 3600, milliseconds=step)
        request = event_request(host, task_id, LIFECYCLE[step], stamp)
        k += 1
        sent = time.perf_counter()
        try:
            status, _, body = await conn.send(request)
        except KeepAlive.ERRORS as exc:
            out["errors"][type(exc).__name__] += 1
            continue
        done = time.perf_counter()
        measured = done >= start + WARMUP_SECONDS
        if not measured:
            continue
        # From the scheduled send (open loop) or the actual send (closed loop).
        out["lat"].append(done - (scheduled if interval else sent))
        if 200 <= status < 300:
            try:
                out["results"][json.loads(body).get("result", "?")] += 1
            except ValueError:
                out["results"]["not-json"] += 1
        else:
            out["errors"][f"http_{status}"] += 1
    conn.close()
    out["reconnects"] = conn.opened
    return out


def load_process(
    url: str, first: int, count: int, conns: int, run: str, rate: float, start: float, stop: float
) -> dict[str, Any]:
    async def main() -> list[dict[str, Any]]:
        return await asyncio.gather(
            *(connection_loop(url, first + i, conns, run, rate, start, stop) for i in range(count))
        )

    merged: dict[str, Any] = {"lat": [], "errors": Counter(), "results": Counter(), "conns": 0}
    cpu = time.process_time()
    results = asyncio.run(main())
    merged["cpu"] = time.process_time() - cpu
    for part in results:
        merged["lat"] += part["lat"]
        merged["errors"].update(part["errors"])
        merged["results"].update(part["results"])
        merged["conns"] += part["reconnects"]
    return merged


def _load_worker(args: tuple) -> dict[str, Any]:
    return load_process(*args)


def run_load(
    url: str,
    *,
    seconds: float,
    conns: int,
    procs: int,
    rate: float,
    run: str,
    meter: CpuMeter | None = None,
) -> dict:
    """Send events for WARMUP_SECONDS + ``seconds``; figures of the measured part."""
    start = time.perf_counter() + 0.5  # every process starts on the same clock
    stop = start + WARMUP_SECONDS + seconds
    per = [conns // procs + (1 if i < conns % procs else 0) for i in range(procs)]
    jobs, first = [], 0
    for count in per:
        jobs.append((url, first, count, conns, run, rate, start, stop))
        first += count
    parts, cpu = drive(_load_worker, jobs, window=(start + WARMUP_SECONDS, stop), meter=meter)
    lat = sorted(x for p in parts for x in p["lat"])
    errors: Counter = sum((p["errors"] for p in parts), Counter())
    results: Counter = sum((p["results"] for p in parts), Counter())
    accepted = sum(results.values())

    return {
        "seconds": seconds,
        "rate_asked": rate,
        "connections": conns,
        "accepted": accepted,
        "accepted_per_s": accepted / seconds,
        "results": dict(results),
        "errors": dict(errors),
        "p50_ms": percentile(lat, 0.50),
        "p90_ms": percentile(lat, 0.90),
        "p99_ms": percentile(lat, 0.99),
        "max_ms": lat[-1] * 1000 if lat else float("nan"),
        "mean_ms": statistics.fmean(lat) * 1000 if lat else float("nan"),
        "connects": sum(p["conns"] for p in parts),
        "generator_cpu_s": sum(p["cpu"] for p in parts),
        **cpu,
        **(
            {
                "server_cpu_ms_per_event": cpu["server_cpu_s"] / n * 1000,
                "postgres_cpu_ms_per_event": cpu["postgres_cpu_s"] / n * 1000,
            }
            if cpu and (n := len(lat))
            else {}
        ),
    }


# --- gunicorn, the database, the drain -------------------------------------------------


def server_env(args: argparse.Namespace) -> dict[str, str]:
    return base_env(
        port=args.port, workers=args.workers, threads=args.threads, BEEOS_WEBHOOK_SECRET=SECRET
    )


def psql(sql: str, dbname: str | None = None) -> str:
    url = os.environ["DATABASE_URL"]
    if dbname:
        url = url.rsplit("/", 1)[0] + "/" + dbname
    out = subprocess.run(
        ["psql", url, "-Atc", sql], check=True, capture_output=True, text=True
    ).stdout
    return out.strip()


def recreate_database(args: argparse.Namespace) -> None:
    name = urlsplit(os.environ["DATABASE_URL"]).path.lstrip("/")
    if "bench" not in name:
        raise SystemExit(f"refusing to recreate {name!r}: the name must contain 'bench'")
    psql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)', dbname="postgres")
    psql(f'CREATE DATABASE "{name}"', dbname="postgres")
    migrate = manage("migrate", "--no-input", "-v", "0", env=server_env(args))
    output, _ = migrate.communicate()
    if migrate.returncode:
        raise SystemExit(f"migrate failed:\n{output}")


def drain(args: argparse.Namespace) -> dict[str, Any]:
    queued = int(psql("SELECT count(*) FROM console_webhookinboxevent WHERE status = 'queued'"))
    dbname = urlsplit(os.environ["DATABASE_URL"]).path.lstrip("/")
    started = time.perf_counter()
    children_before = resource.getrusage(resource.RUSAGE_CHILDREN)
    workers = [
        manage("apply_webhooks", "--batch", str(args.batch), env=server_env(args))
        for _ in range(args.drain_workers)
    ]
    # The database's CPU meanwhile: every backend's CPU, polled (they end with the workers).
    first: dict[int, float] = {p: cpu_of(p) for p in postgres_backends(dbname)}
    last = dict(first)
    while any(w.poll() is None for w in workers):
        for pid in postgres_backends(dbname):
            first.setdefault(pid, 0.0)
            last[pid] = max(last.get(pid, 0.0), cpu_of(pid))
        time.sleep(0.2)
    outputs = [w.communicate()[0].strip() for w in workers]
    seconds = time.perf_counter() - started
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    worker_cpu = (children.ru_utime - children_before.ru_utime) + (
        children.ru_stime - children_before.ru_stime
    )
    postgres_cpu = sum(last[p] - first[p] for p in last)
    # Each worker's own figure excludes its start-up (Django setup): the drain proper.
    inside = [float(m.group(1)) for out in outputs if (m := re.search(r" in ([0-9.]+) s \(", out))]
    left = int(psql("SELECT count(*) FROM console_webhookinboxevent WHERE status = 'queued'"))
    failed = int(psql("SELECT count(*) FROM console_webhookinboxevent WHERE status = 'failed'"))
    return {
        "queued_before": queued,
        "left": left,
        "failed": failed,
        "workers": args.drain_workers,
        "batch": args.batch,
        "seconds": seconds,
        "applied_per_s": (queued - left) / seconds if seconds else 0.0,
        "drain_seconds": max(inside) if inside else seconds,
        "applied_per_s_in_drain": (queued - left) / max(inside) if inside else 0.0,
        "worker_cpu_ms_per_event": worker_cpu / max(queued - left, 1) * 1000,
        "postgres_cpu_ms_per_event": postgres_cpu / max(queued - left, 1) * 1000,
        "worker_output": outputs,
    }


def show(title: str, figures: dict[str, Any]) -> None:
    print(
        f"{title}: {figures['accepted_per_s']:,.0f} events/s accepted "
        f"({figures['accepted']:,} in {figures['seconds']:.0f} s, {figures['connections']} "
        f"connections, rate asked {figures['rate_asked'] or 'max'}); "
        f"latency p50 {figures['p50_ms']:.1f} ms, p90 {figures['p90_ms']:.1f} ms, "
        f"p99 {figures['p99_ms']:.1f} ms, max {figures['max_ms']:.1f} ms; "
        f"errors {figures['errors'] or 0}; results {figures['results']}; "
        f"connections opened {figures['connects']}",
        flush=True,
    )
    if "server_cpu_ms_per_event" in figures:
        print(
            f"  CPU per event: server {figures['server_cpu_ms_per_event']:.3f} ms, PostgreSQL "
            f"{figures['postgres_cpu_ms_per_event']:.3f} ms; load generator "
            f"{figures['generator_cpu_s']:.1f} s in all (warm-up included)",
            flush=True,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fresh", action="store_true", help="drop, recreate, migrate first")
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--rate", type=float, default=1000, help="events/s in all; 0 = max")
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--procs", type=int, default=2, help="load generator processes")
    parser.add_argument("--workers", type=int, default=2, help="gunicorn WEB_CONCURRENCY")
    parser.add_argument("--threads", type=int, default=4, help="gunicorn GUNICORN_THREADS")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--drain-workers", type=int, default=1)
    parser.add_argument("--batch", type=int, default=1000, help="apply_webhooks --batch")
    parser.add_argument("--skip-floor", action="store_true")
    parser.add_argument("--skip-drain", action="store_true")
    parser.add_argument("--floor-only", action="store_true")
    parser.add_argument("--json", type=Path, help="write every figure here")
    parser.add_argument("--log-dir", type=Path, default=ROOT / "var" / "bench")
    args = parser.parse_args()
    if "DATABASE_URL" not in os.environ:
        raise SystemExit("set DATABASE_URL (a database whose name contains 'bench')")
    args.log_dir.mkdir(parents=True, exist_ok=True)
    run = datetime.now(UTC).strftime("%H%M%S")
    url = f"http://127.0.0.1:{args.port}"
    figures: dict[str, Any] = {"args": {k: str(v) for k, v in vars(args).items()}}
    print(f"load average before: {load_average()}", flush=True)
    if args.fresh and not args.floor_only:
        recreate_database(args)
        print("database recreated and migrated", flush=True)
    if not args.floor_only:
        server = start_gunicorn(
            "beeos_console.wsgi", server_env(args), port=args.port, log_dir=args.log_dir
        )
        try:
            figures["receiver"] = run_load(
                url,
                seconds=args.seconds,
                conns=args.connections,
                procs=args.procs,
                rate=args.rate,
                run=run,
                meter=CpuMeter(server),
            )
        finally:
            stop_gunicorn(server)
        show("receiver", figures["receiver"])
        print(f"load average after the receiver run: {load_average()}", flush=True)
        if not args.skip_drain:
            figures["drain"] = d = drain(args)
            print(
                f"drain: {d['queued_before'] - d['left']:,} events applied by {d['workers']} "
                f"apply_webhooks worker(s), batch {d['batch']}: "
                f"{d['applied_per_s_in_drain']:,.0f} events/s over the drain itself "
                f"({d['drain_seconds']:.1f} s; {d['applied_per_s']:,.0f} events/s counting "
                f"process start-up, {d['seconds']:.1f} s); left queued {d['left']}, failed "
                f"{d['failed']}",
                flush=True,
            )
            print(
                f"  CPU per applied event: apply_webhooks {d['worker_cpu_ms_per_event']:.3f} ms "
                f"(start-up included), PostgreSQL {d['postgres_cpu_ms_per_event']:.3f} ms",
                flush=True,
            )
            for line in d["worker_output"]:
                print(f"  {line}", flush=True)
            print(f"load average after the drain: {load_average()}", flush=True)
    if not args.skip_floor:
        floor = start_gunicorn(
            "bench.webhooks:floor_app", server_env(args), port=args.port, log_dir=args.log_dir
        )
        try:
            figures["floor"] = run_load(
                url,
                seconds=args.seconds,
                conns=args.connections,
                procs=args.procs,
                rate=args.rate,
                run=run + "f",
                meter=CpuMeter(floor),
            )
        finally:
            stop_gunicorn(floor)
        show("bare floor (trivial WSGI app, same gunicorn settings)", figures["floor"])
        print(f"load average after the floor run: {load_average()}", flush=True)
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2, default=str))


if __name__ == "__main__":
    main()
