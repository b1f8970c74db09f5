"""Headroom through gunicorn (#16.5): a mixed load of operators and a feeder over real HTTP.

    export DJANGO_SETTINGS_MODULE=bench.settings
    export DATABASE_URL=postgres://postgres@127.0.0.1:5432/beeos_bench   # loaded by bench.load
    .venv/bin/python -m bench.headroom --workers 1,2,4 --seconds 60 --clients 16 [--json out.json]

For each ``--workers`` count: start the console under gunicorn with
``beeos_console/gunicorn_conf.py`` (``WEB_CONCURRENCY`` = that count, ``--threads`` per
worker, production settings as ``make serve`` has them: DEBUG=0, manifest static files,
the JSON request log, Prometheus multiprocess files; no HTTPS), then ``--clients``
closed-loop clients (asyncio, raw keep-alive HTTP/1.1, spread over ``--procs`` forked
processes) each draw a request from the weighted mix below, send it, wait for the whole
answer, draw the next. ``--warmup`` seconds first, then ``--seconds`` measured: a request
counts when its answer arrives inside the measured window.

The mix (``--mix key=weight,…`` changes any weight; 0 leaves a kind out): the dashboard;
task, operation and message lists (unfiltered, filtered, the 51st task page by keyset
cursor); task and operation detail pages (rows picked at random, plus the task with
1,000 messages); header searches (an id fragment, full-text words); single cancels of
open OpenAPI tasks (each cancel consumes one: distinct tasks, never asked before); ingest
batches of 10 records (4 tasks, 4 messages, an operation, an event) with an API token.

Operators are a ``bench-operator`` user in the ``operator`` group, one session per client
(made here, signed with the server's SECRET_KEY) and a CSRF cookie and token for the
cancel POSTs, sent as htmx sends them from the task page. The feeder is ``bench-feeder``
with a new API token. Cancels go to the tests' stand-in BeeOS server (``tests/standin``,
run in this process) through the console's BeeOS gateway and ``beeos-sdk`` over HTTP:
the cancel call, then the re-read of the task and its messages; ``--local-gateway``
cancels in the mirror instead (no upstream).

Reported per kind: answers, answers/s, p50/p99/max latency, the status codes and the
outcomes (a cancel's result banner, the ingest results); an error is an exception, a
status the kind does not expect (pages 200; searches 200 or 302; a 302 to the login page
is an error too) or an outcome that is not one (a cancel that did not succeed, a rejected
record). Then the CPU of gunicorn, of the database's backends, of the load generator and
of this process (the stand-in) over the measured window, from ``/proc``, in cores and per
request, the machine's busy cores, and what saturates.

Its name must contain "bench": the run writes rows (ingest, cancels, sessions).
Not a test: nothing here asserts a timing.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import re
import shutil
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import import_module
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit

from bench.httpload import (
    ROOT,
    SECRET_KEY,
    CpuMeter,
    KeepAlive,
    children,
    drive,
    load_average,
    manage,
    percentile,
    server_env,
    start_gunicorn,
    stop_gunicorn,
)

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bench.settings")
# The sessions made here are read by the server: both sign with the same key.
os.environ["SECRET_KEY"] = SECRET_KEY

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402
from django.contrib.auth import (  # noqa: E402
    BACKEND_SESSION_KEY,
    HASH_SESSION_KEY,
    SESSION_KEY,
    load_backend,
)
from django.contrib.auth.models import Group, User  # noqa: E402
from django.db import connection, connections  # noqa: E402
from django.db.models import Exists, OuterRef  # noqa: E402
from django.middleware.csrf import CSRF_ALLOWED_CHARS, CSRF_SECRET_LENGTH  # noqa: E402
from django.test import Client  # noqa: E402
from django.utils.crypto import get_random_string  # noqa: E402

from beeos_console.cancels.models import CancelRequest  # noqa: E402
from beeos_console.core import roles, tokens  # noqa: E402
from beeos_console.core.links import object_url  # noqa: E402
from beeos_console.core.middleware import LAST_SEEN_KEY  # noqa: E402
from bench.ingest import Feed  # noqa: E402
from bench.load import DETAIL_TASK_ID, FEEDER_USER  # noqa: E402
from bench.run import DEEP_CLICKS, follow_next, pick_agent  # noqa: E402
from bench.search import sample  # noqa: E402
from operations.models import RuntimeOperation  # noqa: E402
from tasks import states as task_states  # noqa: E402
from tasks.models import Task  # noqa: E402
from tests.standin import BeeOSStandIn  # noqa: E402

OPERATOR_USER = "bench-operator"
STANDIN_KEY = "oag_bench_headroom"
INGEST_PATH = "/api/v1/ingest/"
TIMEOUT = 60.0  # seconds for one answer before it counts as an error
OPEN_OPENAPI = ("queued", "running", "input_required", "auth_required")
BANNER = re.compile(rb'class="banner banner-(\w+)"')
PAGE = frozenset({200})


@dataclass(frozen=True)
class Kind:
    key: str
    label: str
    weight: float  # default share of the draws, %
    expected: frozenset[int] = PAGE


KINDS = (
    Kind("dashboard", "dashboard", 3),
    Kind("tasks", "tasks: unfiltered", 12),
    Kind("tasks_failed", "tasks: ?status=failed", 6),
    Kind("tasks_agent", "tasks: one agent", 4),
    Kind("tasks_stuck", "tasks: processing & stuck 60", 3),
    Kind("tasks_deep", f"tasks: deep page ({DEEP_CLICKS} x Older)", 4),
    Kind("ops", "operations: unfiltered", 5),
    Kind("ops_filtered", "operations: ?raw_status=outcome_unknown", 3),
    Kind("messages", "messages: unfiltered", 4),
    Kind("messages_failed", "messages: ?state=failed", 2),
    Kind("task_detail", "task detail", 16),
    Kind("op_detail", "operation detail", 8),
    Kind("search_id", "search: id fragment", 6, frozenset({200, 302})),
    Kind("search_text", "search: full text", 4, frozenset({200, 302})),
    Kind("cancel", "cancel: one open task", 2),
    Kind("ingest", "ingest: 10 records", 18),
)
BY_KEY = {k.key: k for k in KINDS}


# --- the load generator (forked processes; no Django, no database) ------------------------


@dataclass
class Job:
    """What one load process does: its connections and everything they may ask for."""

    url: str
    conns: list[int]
    cookies: list[str]  # Cookie header per connection (session + CSRF cookie)
    csrf: list[str]  # CSRF token per connection
    plan: dict[str, list[str]]  # GET paths per kind
    weights: dict[str, float]
    cancels: list[str]  # cancel URLs of open tasks, each used once
    api_key: str
    tag: str  # makes the ingested ids unique per run
    seed: int
    start: float
    measure_from: float
    stop: float
    stats: dict[str, dict[str, Any]] = field(default_factory=dict)


def http_request(method: str, host: str, path: str, headers: dict[str, str], body: bytes) -> bytes:
    lines = [f"{method} {path} HTTP/1.1", f"Host: {host}"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    if method != "GET":
        lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def ingest_batch(feed: Feed, b: int) -> bytes:
    """10 records, as a feeder sends them between two big batches: 4 tasks with a message
    each, an operation and one of its events."""
    records = [{"kind": "openapi_task", "data": feed.openapi_task(4 * b + k)} for k in range(4)]
    records += [{"kind": "message", "data": feed.message(4 * b + k, 4 * b + k)} for k in range(4)]
    records.append({"kind": "runtime_operation", "data": feed.operation(b)})
    records.append({"kind": "runtime_operation_event", "data": feed.event(b, b)})
    return json.dumps({"records": records}, separators=(",", ":")).encode()


def next_request(job: Job, i: int, key: str, rng: random.Random, feed: Feed, b: int) -> bytes:
    host = urlsplit(job.url).netloc
    page = {"Cookie": job.cookies[i], "Accept": "text/html", "Accept-Language": "en"}
    if key == "cancel":
        form = {
            "csrfmiddlewaretoken": job.csrf[i],
            "protocol": task_states.OPENAPI,
            "idempotency_key": f"console-headroom-{job.tag}-{job.conns[i]}-{b}",
            "reason": "headroom benchmark",
        }
        headers = {
            **page,
            "Content-Type": "application/x-www-form-urlencoded",
            "HX-Request": "true",
            "HX-Target": "cancel-area",
        }
        return http_request("POST", host, job.cancels.pop(), headers, urlencode(form).encode())
    if key == "ingest":
        headers = {"Authorization": f"Bearer {job.api_key}", "Content-Type": "application/json"}
        return http_request("POST", host, INGEST_PATH, headers, ingest_batch(feed, b))
    return http_request("GET", host, rng.choice(job.plan[key]), page, b"")


def judge(stats: dict[str, Any], key: str, status: int, body: bytes) -> None:
    """Count one answer's status and outcome; anything unexpected is an error."""
    stats["status"][status] += 1
    if status not in BY_KEY[key].expected:
        stats["errors"][f"HTTP {status}"] += 1
        return
    if key == "cancel":
        match = BANNER.search(body)
        style = match.group(1).decode() if match else "no result banner"
        stats["outcomes"][style] += 1
        if style != "success":
            stats["errors"][f"cancel: {style}"] += 1
    elif key == "ingest":
        try:
            results = Counter(r.get("result", "?") for r in json.loads(body)["results"])
        except (ValueError, KeyError, TypeError, AttributeError):
            results = Counter({"unreadable answer": 1})
        stats["outcomes"].update(results)
        bad = sum(n for result, n in results.items() if result in ("rejected", "unreadable answer"))
        if bad:
            stats["errors"]["ingest: rejected or unreadable"] += bad


async def client_loop(job: Job, i: int, state: Counter) -> None:
    """One operator (or the feeder, by the draw): closed loop, one keep-alive connection."""
    conn = KeepAlive(job.url, TIMEOUT)
    rng = random.Random(job.seed * 10_000 + job.conns[i])
    keys = [k for k, w in job.weights.items() if w > 0]
    weights = [job.weights[k] for k in keys]
    feed = Feed(run=f"{job.tag}c{job.conns[i]:03d}")
    b = 0
    await asyncio.sleep(max(0.0, job.start - time.perf_counter()))
    while time.perf_counter() < job.stop:
        key = rng.choices(keys, weights)[0]
        if key == "cancel" and not job.cancels:
            state["cancels skipped: no open task left"] += 1
            continue
        request = next_request(job, i, key, rng, feed, b)
        b += 1
        sent = time.perf_counter()
        stats = job.stats[key]
        try:
            status, _, body = await conn.send(request)
        except KeepAlive.ERRORS as exc:
            if sent >= job.measure_from:
                stats["errors"][type(exc).__name__] += 1
            continue
        done = time.perf_counter()
        if job.measure_from <= done <= job.stop:
            stats["lat"].append(done - sent)
            judge(stats, key, status, body)
    conn.close()
    state["connections opened"] += conn.opened


def load_process(job: Job) -> dict[str, Any]:
    job.stats = {
        k: {"lat": [], "status": Counter(), "errors": Counter(), "outcomes": Counter()}
        for k in job.weights
    }
    state: Counter = Counter()
    cpu = time.process_time()

    async def main() -> None:
        await asyncio.gather(*(client_loop(job, i, state) for i in range(len(job.conns))))

    asyncio.run(main())
    return {"stats": job.stats, "state": state, "cpu": time.process_time() - cpu}


# --- the data: users, sessions, the pages to ask for, the tasks to cancel -------------------


def operator_user() -> User:
    user, _ = User.objects.get_or_create(username=OPERATOR_USER)
    user.groups.add(Group.objects.get(name=roles.OPERATOR))
    return user


def feeder_key() -> str:
    feeder, _ = User.objects.get_or_create(username=FEEDER_USER)
    feeder.groups.add(Group.objects.get(name=roles.FEEDER))
    return tokens.issue(feeder, "bench headroom", days=1)[1]


def new_session(user: User) -> str:
    """A logged-in session as ``django.contrib.auth.login`` leaves it; its key."""
    store = import_module(settings.SESSION_ENGINE).SessionStore()
    store[SESSION_KEY] = user._meta.pk.value_to_string(user)
    # The backend login() would record (as the test client's force_login picks it).
    store[BACKEND_SESSION_KEY] = next(
        path for path in settings.AUTHENTICATION_BACKENDS if hasattr(load_backend(path), "get_user")
    )
    store[HASH_SESSION_KEY] = user.get_session_auth_hash()
    store[LAST_SEEN_KEY] = int(time.time())
    store.create()
    return store.session_key


def build_plan(user: User, rng: random.Random, n: int) -> dict[str, list[str]]:
    """The GET paths of every kind: the fixed list pages and ``n`` sampled objects."""
    client = Client()
    client.force_login(user)
    agent = pick_agent()
    deep = follow_next(client, "/tasks/", DEEP_CLICKS)
    pks = [int(v) for v in sample("SELECT id, id::text AS v FROM tasks_task", n, rng)]
    tasks = Task.objects.filter(pk__in=pks).values_list("task_id", "protocol")
    # Message bodies say "ticket <task pk>": a rare number, three messages each.
    words = [f"ticket {rng.choice(pks)}" for _ in range(n // 10 + 1)]
    pks = [
        int(v) for v in sample("SELECT id, id::text AS v FROM operations_runtimeoperation", n, rng)
    ]
    ops = RuntimeOperation.objects.filter(pk__in=pks).values_list("operation_id", flat=True)
    openapi = sample("SELECT id, task_id AS v FROM tasks_task WHERE protocol = 'openapi'", n, rng)
    words += ["order history", "timeout"]
    return {
        "dashboard": ["/"],
        "tasks": ["/tasks/"],
        "tasks_failed": ["/tasks/?status=failed"],
        "tasks_agent": [f"/tasks/?{urlencode({'agent_id': agent})}"],
        "tasks_stuck": ["/tasks/?status=processing&stuck=60"],
        "tasks_deep": [deep],
        "ops": ["/operations/"],
        "ops_filtered": ["/operations/?raw_status=outcome_unknown"],
        "messages": ["/messages/"],
        "messages_failed": ["/messages/?state=failed"],
        "task_detail": [object_url("tasks:detail", t, protocol=p) for t, p in tasks]
        + [object_url("tasks:detail", DETAIL_TASK_ID)],
        "op_detail": [object_url("operations:detail", o) for o in ops],
        "search_id": ["/search/?" + urlencode({"q": t[6:14]}) for t in openapi],
        "search_text": ["/search/?" + urlencode({"q": w}) for w in words],
    }


def open_tasks(n: int) -> list[tuple[str, str, str, datetime, datetime | None]]:
    """Up to ``n`` open OpenAPI tasks, newest first, that no cancel has asked for yet."""
    asked = CancelRequest.objects.filter(object_kind="task", object_id=OuterRef("task_id"))
    rows = (
        Task.objects.filter(protocol=task_states.OPENAPI, raw_state__in=OPEN_OPENAPI)
        .exclude(Exists(asked))
        .order_by("-created_at", "-id")
        .values_list("task_id", "agent_id", "raw_state", "created_at", "started_at")[:n]
    )
    return [r for r in rows if task_states.is_cancellable(task_states.OPENAPI, r[2])]


def seed_standin(server: BeeOSStandIn, rows: list[tuple]) -> None:
    """The same open tasks upstream, so a cancel is accepted and its re-read finds them."""
    for task_id, agent_id, raw_state, created_at, started_at in rows:
        extra = {"started_at": started_at} if started_at else {}
        server.add_task(
            task_id, agent_id=agent_id, status=raw_state, created_at=created_at, **extra
        )


# --- one run per worker count -----------------------------------------------------------------


def split(items: list, parts: int) -> list[list]:
    return [items[i::parts] for i in range(parts)]


def run_workers(workers: int, ctx: dict[str, Any], args: argparse.Namespace) -> dict[str, Any]:
    env = server_env(port=args.port, workers=workers, threads=args.threads, **ctx["env"])
    shutil.rmtree(env["PROMETHEUS_MULTIPROC_DIR"], ignore_errors=True)
    Path(env["PROMETHEUS_MULTIPROC_DIR"]).mkdir(parents=True)
    cookies, csrf = [], []
    for _ in range(args.clients):
        token = get_random_string(CSRF_SECRET_LENGTH, CSRF_ALLOWED_CHARS)
        session = new_session(ctx["user"])
        cookies.append(
            f"{settings.SESSION_COOKIE_NAME}={session}; {settings.CSRF_COOKIE_NAME}={token}"
        )
        csrf.append(token)
    connections.close_all()  # nothing of this process's database connection in the children
    if ctx["standin"] is not None:
        ctx["standin"].clear_requests()
    began = time.perf_counter()
    server = start_gunicorn("beeos_console.wsgi", env, port=args.port, log_dir=args.log_dir)
    print(
        f"gunicorn up ({workers} worker(s)) in {time.perf_counter() - began:.1f} s; "
        f"{args.warmup:.0f} s warm-up, {args.seconds:.0f} s measured …",
        flush=True,
    )
    before = load_average()
    try:
        start = time.perf_counter() + 0.5  # every process starts on the same clock
        measure_from = start + args.warmup
        stop = measure_from + args.seconds
        tag = f"hr{datetime.now(UTC).strftime('%H%M%S')}w{workers}"
        conns = split(list(range(args.clients)), args.procs)
        cancels = split(ctx["cancels"].pop(0), args.procs)
        jobs = [
            Job(
                url=f"http://127.0.0.1:{args.port}",
                conns=mine,
                cookies=[cookies[c] for c in mine],
                csrf=[csrf[c] for c in mine],
                plan=ctx["plan"],
                weights=ctx["weights"],
                cancels=cancels[p],
                api_key=ctx["api_key"],
                tag=tag,
                seed=args.seed,
                start=start,
                measure_from=measure_from,
                stop=stop,
            )
            for p, mine in enumerate(conns)
            if mine
        ]
        groups = {
            "generator": lambda: [p for p in children(os.getpid()) if p != server.pid],
            "driver": lambda: [os.getpid()],
        }
        meter = CpuMeter(server, groups, machine=True)
        parts, cpu = drive(load_process, jobs, window=(measure_from, stop), meter=meter)
    finally:
        began = time.perf_counter()
        stop_gunicorn(server)
        print(f"gunicorn stopped in {time.perf_counter() - began:.1f} s", flush=True)
    figures = summarize(parts, cpu, workers, args)
    figures["load_average"] = {"before": before, "after": load_average()}
    if ctx["standin"] is not None:
        figures["standin_requests"] = dict(sorted(ctx["standin"].calls.items()))
        figures["standin_errors"] = list(ctx["standin"].errors[-3:])
    return figures


def summarize(
    parts: list[dict], cpu: dict[str, float], workers: int, args: argparse.Namespace
) -> dict[str, Any]:
    seconds = args.seconds
    kinds: dict[str, Any] = {}
    for key in parts[0]["stats"]:
        merged = [p["stats"][key] for p in parts]
        lat = sorted(x for m in merged for x in m["lat"])
        kinds[key] = {
            "label": BY_KEY[key].label,
            "count": len(lat),
            "per_s": len(lat) / seconds,
            "p50_ms": percentile(lat, 0.50),
            "p99_ms": percentile(lat, 0.99),
            "max_ms": lat[-1] * 1000 if lat else float("nan"),
            "status": dict(sum((m["status"] for m in merged), Counter())),
            "errors": dict(sum((m["errors"] for m in merged), Counter())),
            "outcomes": dict(sum((m["outcomes"] for m in merged), Counter())),
        }
    total = sum(k["count"] for k in kinds.values())
    wall = cpu.get("wall_s") or seconds
    cores = {
        group: cpu.get(f"{group}_cpu_s", 0.0) / wall
        for group in ("server", "postgres", "generator", "driver", "machine")
    }
    cores["other"] = max(0.0, cores["machine"] - sum(v for g, v in cores.items() if g != "machine"))
    return {
        "workers": workers,
        "threads": args.threads,
        "clients": args.clients,
        "seconds": seconds,
        "kinds": kinds,
        "total": total,
        "per_s": total / seconds,
        "errors": sum(sum(k["errors"].values()) for k in kinds.values()),
        "state": dict(sum((p["state"] for p in parts), Counter())),
        "generator_cpu_s_all": sum(p["cpu"] for p in parts),
        "cpu": cpu,
        "cores": cores,
        "cpu_ms_per_request": {
            "server": cpu.get("server_cpu_s", 0.0) / max(total, 1) * 1000,
            "postgres": cpu.get("postgres_cpu_s", 0.0) / max(total, 1) * 1000,
        },
        "saturates": saturation(cores, workers, os.cpu_count() or 1),
    }


def saturation(cores: dict[str, float], workers: int, cpus: int) -> str:
    """Which resource ran out first, from where the CPU went during the measured window."""
    web, db, busy = cores["server"], cores["postgres"], cores["machine"]
    split_words = (
        f"gunicorn {web:.2f}, PostgreSQL {db:.2f}, load generator {cores['generator']:.2f}, "
        f"stand-in {cores['driver']:.2f}, rest of the machine {cores['other']:.2f} cores"
    )
    if busy >= 0.9 * cpus:
        first = "the web tier (gunicorn)" if web >= db else "the database (PostgreSQL)"
        noisy = (
            "; NOT QUIET: other processes took more than the console did, so these are not "
            "its capacity"
            if cores["other"] > max(web, db)
            else ""
        )
        return f"machine CPU: {busy:.2f} of {cpus} cores busy ({split_words}); most: {first}{noisy}"
    if web >= 0.85 * workers:
        return (
            f"gunicorn's workers: {web:.2f} cores for {workers} process(es), about one core "
            f"each at most (the GIL); the machine had {cpus - busy:.2f} cores idle ({split_words})"
        )
    if db >= 0.85 * cpus:
        return f"the database: {db:.2f} cores ({split_words})"
    return (
        f"no CPU ran out ({busy:.2f} of {cpus} cores busy: {split_words}): the clients wait on "
        f"something else (locks, the network, too few clients: raise --clients)"
    )


# --- output ---------------------------------------------------------------------------------


def fmt_errors(k: dict[str, Any]) -> str:
    return ", ".join(f"{name} {n}" for name, n in sorted(k["errors"].items())) or "0"


def show(fig: dict[str, Any]) -> None:
    print(
        f"\n== {fig['workers']} worker(s) x {fig['threads']} threads, {fig['clients']} clients, "
        f"{fig['seconds']:.0f} s measured; load average {fig['load_average']['before']} -> "
        f"{fig['load_average']['after']}"
    )
    print(
        f"{'kind':42} {'answers':>8} {'/s':>7} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8}  "
        "errors; statuses; outcomes"
    )
    for k in fig["kinds"].values():
        outcomes = f"; {k['outcomes']}" if k["outcomes"] else ""
        print(
            f"{k['label']:42} {k['count']:8,} {k['per_s']:7.1f} {k['p50_ms']:8.1f} "
            f"{k['p99_ms']:8.1f} {k['max_ms']:8.1f}  {fmt_errors(k)}; {k['status']}{outcomes}"
        )
    c, ms = fig["cores"], fig["cpu_ms_per_request"]
    print(f"{'all':42} {fig['total']:8,} {fig['per_s']:7.1f}  errors {fig['errors']}")
    print(
        f"CPU, cores over the window: gunicorn {c['server']:.2f}, PostgreSQL {c['postgres']:.2f}, "
        f"load generator {c['generator']:.2f}, stand-in {c['driver']:.2f}, rest of the machine "
        f"{c['other']:.2f}; machine busy {c['machine']:.2f} of {os.cpu_count()}"
    )
    print(f"CPU per request: gunicorn {ms['server']:.2f} ms, PostgreSQL {ms['postgres']:.2f} ms")
    print(f"saturates: {fig['saturates']}")
    if fig["state"]:
        print(f"clients: {fig['state']}")
    if "standin_requests" in fig:
        print(f"stand-in BeeOS received: {fig['standin_requests'] or 'nothing'}")
        for error in fig["standin_errors"]:
            print(f"stand-in error: {error[-300:]}")


def markdown(runs: list[dict[str, Any]]) -> None:
    """The per-kind table for bench/README.md: answers/s and p50 / p99 ms per worker count."""
    head = " | ".join(f"{r['workers']} worker(s): /s, p50 / p99 ms" for r in runs)
    print(f"\n| kind | {head} |\n|---|" + "---|" * len(runs))
    for key, kind in runs[0]["kinds"].items():
        cells = []
        for r in runs:
            k = r["kinds"][key]
            errors = f" ({sum(k['errors'].values())} errors)" if k["errors"] else ""
            cells.append(f"{k['per_s']:.1f}, {k['p50_ms']:.0f} / {k['p99_ms']:.0f}{errors}")
        print(f"| {kind['label']} | " + " | ".join(cells) + " |")
    print("| **all requests/s** | " + " | ".join(f"**{r['per_s']:.1f}**" for r in runs) + " |")
    print(
        "| CPU cores: gunicorn / PostgreSQL / generator / machine | "
        + " | ".join(
            f"{r['cores']['server']:.2f} / {r['cores']['postgres']:.2f} / "
            f"{r['cores']['generator']:.2f} / {r['cores']['machine']:.2f}"
            for r in runs
        )
        + " |"
    )
    print(
        "| CPU ms per request: gunicorn / PostgreSQL | "
        + " | ".join(
            f"{r['cpu_ms_per_request']['server']:.2f} / {r['cpu_ms_per_request']['postgres']:.2f}"
            for r in runs
        )
        + " |"
    )


# --- main -----------------------------------------------------------------------------------


def parse_mix(text: str) -> dict[str, float]:
    weights = {k.key: float(k.weight) for k in KINDS}
    for part in filter(None, (p.strip() for p in text.split(","))):
        key, _, value = part.partition("=")
        if key not in weights:
            raise SystemExit(f"--mix: unknown kind {key!r}; kinds: {', '.join(weights)}")
        weights[key] = float(value)
    return weights


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", default="1,2,4", help="gunicorn WEB_CONCURRENCY, one run each")
    parser.add_argument("--threads", type=int, default=4, help="gunicorn GUNICORN_THREADS")
    parser.add_argument("--seconds", type=float, default=60, help="measured, per run")
    parser.add_argument("--warmup", type=float, default=5, help="seconds before, per run")
    parser.add_argument("--clients", type=int, default=16, help="closed-loop clients")
    parser.add_argument("--procs", type=int, default=2, help="load generator processes")
    parser.add_argument("--mix", default="", help="key=weight,… (weights in %% by default)")
    parser.add_argument("--samples", type=int, default=200, help="objects per detail/search")
    parser.add_argument("--cancel-pool", type=int, default=1500, help="open tasks per run")
    parser.add_argument("--local-gateway", action="store_true", help="no stand-in BeeOS")
    parser.add_argument("--port", type=int, default=8766)
    parser.add_argument("--seed", type=int, default=16)
    parser.add_argument("--json", type=Path, help="write every figure here")
    parser.add_argument("--log-dir", type=Path, default=ROOT / "var" / "bench")
    args = parser.parse_args()
    name = settings.DATABASES["default"]["NAME"]
    if "bench" not in name:
        raise SystemExit(f"refusing to write into {name!r}: its name must contain 'bench'")
    worker_counts = [int(w) for w in args.workers.split(",") if w.strip()]
    args.log_dir.mkdir(parents=True, exist_ok=True)
    weights = parse_mix(args.mix)
    print(f"kinds and weights: {weights}")

    with connection.cursor() as cursor:
        cursor.execute("SELECT reltuples::bigint FROM pg_class WHERE relname = 'tasks_task'")
        n_tasks = cursor.fetchone()[0]
    print(
        f"database {name} (~{n_tasks:,} tasks); {os.cpu_count()} CPUs; load average "
        f"{load_average()}; gateway: {'local' if args.local_gateway else 'BeeOS (stand-in)'}",
        flush=True,
    )
    started = time.perf_counter()
    user = operator_user()
    plan = build_plan(user, random.Random(args.seed), args.samples)
    pool = open_tasks(args.cancel_pool * len(worker_counts))
    per_run = len(pool) // len(worker_counts)
    print(
        f"prepared in {time.perf_counter() - started:.1f} s: {per_run} open tasks to cancel per "
        f"run ({len(pool)} found)",
        flush=True,
    )
    standin = None
    extra = {
        "STATIC_ROOT": str(args.log_dir / "staticfiles"),
        "PROMETHEUS_MULTIPROC_DIR": str(args.log_dir / "prometheus-headroom"),
        "BEEOS_API_URL": "",
        "BEEOS_API_KEY": "",
        "BEEOS_CLOUD_URL": "",
    }
    try:
        if not args.local_gateway:
            began = time.perf_counter()
            standin = BeeOSStandIn(api_key=STANDIN_KEY).start()
            seed_standin(standin, pool[: per_run * len(worker_counts)])
            print(
                f"stand-in BeeOS at {standin.url}, {per_run * len(worker_counts)} open tasks "
                f"seeded in {time.perf_counter() - began:.1f} s",
                flush=True,
            )
            extra.update(BEEOS_API_URL=standin.url, BEEOS_API_KEY=STANDIN_KEY)
        env = server_env(port=args.port, workers=1, threads=args.threads, **extra)
        began = time.perf_counter()
        collect = manage("collectstatic", "--no-input", "-v", "0", env=env)
        output, _ = collect.communicate()
        if collect.returncode:
            raise SystemExit(f"collectstatic failed:\n{output}")
        print(f"static files collected in {time.perf_counter() - began:.1f} s", flush=True)
        ctx = {
            "user": user,
            "api_key": feeder_key(),
            "plan": plan,
            "weights": weights,
            "cancels": [
                [
                    object_url("tasks:cancel", row[0])
                    for row in pool[i * per_run : (i + 1) * per_run]
                ]
                for i in range(len(worker_counts))
            ],
            "standin": standin,
            "env": extra,
        }
        runs = []
        for workers in worker_counts:
            runs.append(run_workers(workers, ctx, args))
            show(runs[-1])
    finally:
        if standin is not None:
            standin.stop()
    markdown(runs)
    if args.json:
        args.json.write_text(json.dumps({"args": vars(args), "runs": runs}, indent=2, default=str))


if __name__ == "__main__":
    main()
