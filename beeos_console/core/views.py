"""The load balancer probes."""

from __future__ import annotations

import asyncio
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import psycopg
from django.contrib.auth.decorators import login_not_required
from django.db import connections
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.cache import never_cache

# /readyz answers within this many seconds, whatever the database does: a server
# that accepts the connection and then never replies is "unavailable", not a hang.
READY_DEADLINE = 1.5
# Server-side bounds for the probe's own statement (milliseconds).
READY_STATEMENT_TIMEOUT_MS = 1000


def probe_conninfo(alias: str = "default") -> dict[str, Any]:
    """The connection parameters of database ``alias``, as plain libpq keywords, with
    the probe's own short connect, statement and lock timeouts."""
    params = {
        key: value
        for key, value in connections[alias].get_connection_params().items()
        if isinstance(value, str | int) and key not in {"prepare_threshold"}
    }
    timeout = max(1, int(READY_DEADLINE))
    params["connect_timeout"] = min(int(params.get("connect_timeout") or timeout), timeout)
    options = [
        params.get("options", ""),
        f"-c statement_timeout={READY_STATEMENT_TIMEOUT_MS}",
        f"-c lock_timeout={READY_STATEMENT_TIMEOUT_MS}",
    ]
    params["options"] = " ".join(part for part in options if part)
    params["application_name"] = "beeos-console-readyz"
    return params


async def _select_one(conninfo: dict[str, Any]) -> None:
    conn = await psycopg.AsyncConnection.connect(**conninfo, autocommit=True)
    try:
        await conn.execute("SELECT 1")
    finally:
        await conn.close()


def _run(coroutine_function: Any) -> None:
    """``asyncio.run`` here, or in a thread of its own when this thread already runs a
    loop (an ASGI server, a test driving a browser)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        asyncio.run(coroutine_function())
        return
    with ThreadPoolExecutor(max_workers=1) as pool:
        pool.submit(asyncio.run, coroutine_function()).result()


def check_database(
    conninfo: dict[str, Any] | str | None = None, *, deadline: float = READY_DEADLINE
) -> tuple[bool, str]:
    """Connect and ``SELECT 1`` on a connection of its own, given up after ``deadline``
    seconds whatever the server does. ``conninfo``: libpq keywords or a DSN (default:
    the default database's). Returns (ready, error class name or "")."""
    if conninfo is None:
        conninfo = probe_conninfo()
    params = psycopg.conninfo.conninfo_to_dict(conninfo) if isinstance(conninfo, str) else conninfo

    async def bounded() -> None:
        await asyncio.wait_for(_select_one(params), timeout=deadline)

    try:
        _run(bounded)
    except TimeoutError:
        return False, "Timeout"
    except Exception as exc:  # noqa: BLE001 - any database failure means not ready
        return False, type(exc).__name__
    return True, ""


@login_not_required
@never_cache
def healthz(request: HttpRequest) -> HttpResponse:
    """The process is up."""
    return JsonResponse({"status": "ok"})


@login_not_required
@never_cache
def readyz(request: HttpRequest) -> HttpResponse:
    """The database answers, within READY_DEADLINE seconds."""
    started = time.monotonic()
    ready, error = check_database()
    elapsed_ms = round((time.monotonic() - started) * 1000)
    if not ready:
        return JsonResponse(
            {"status": "unavailable", "error": error, "elapsed_ms": elapsed_ms}, status=503
        )
    return JsonResponse({"status": "ok"})
