"""gunicorn's settings for `make serve` (``gunicorn -c beeos_console/gunicorn_conf.py``).

Tuned from the environment: HOST and PORT (bind), WEB_CONCURRENCY (worker
processes), GUNICORN_THREADS (threads per worker), GUNICORN_KEEPALIVE,
GRACEFUL_TIMEOUT, FORWARDED_ALLOW_IPS, LOG_FORMAT, METRICS_BIND (a second listener).
"""

from __future__ import annotations

import os
from typing import Any

from prometheus_client import multiprocess

from beeos_console.core import requestlog


def _int(name: str, default: int) -> int:
    return int(os.environ.get(name, "") or default)


_host = os.environ.get("HOST", "") or "127.0.0.1"
if ":" in _host and not _host.startswith("["):
    _host = f"[{_host}]"  # an IPv6 address
bind = [f"{_host}:{_int('PORT', 8000)}"]
# /metrics without a token on this second listener only (README "Metrics"): gunicorn
# sets SERVER_NAME/SERVER_PORT from the listening socket, never from the request.
if os.environ.get("METRICS_BIND", "").strip():
    bind.append(os.environ["METRICS_BIND"].strip())

# Processes: WEB_CONCURRENCY, as platforms that size it (Heroku, Render) set it.
workers = _int("WEB_CONCURRENCY", 2)
# gthread, not sync: the sync worker closes every connection after one response, and
# webhook senders and load balancers keep connections alive. Threads also keep one
# slow client (a long CSV export) from holding a whole process, and the worker's
# heartbeat comes from its main loop, so a long export is never killed as "hung".
# Each thread holds its own database connection: at most workers x threads.
worker_class = "gthread"
threads = _int("GUNICORN_THREADS", 4)
# Seconds an idle kept-alive connection stays open. Behind a load balancer, set it
# above the balancer's idle timeout, or it may reuse a connection gunicorn just closed.
keepalive = _int("GUNICORN_KEEPALIVE", 5)
# A worker whose main loop stops reporting for this long is restarted.
timeout = 60
# On SIGTERM: stop accepting, let in-flight requests finish for up to this long, then
# stop. Keep it below the orchestrator's own grace period (Kubernetes: 30 s).
graceful_timeout = _int("GRACEFUL_TIMEOUT", 25)

# X-Forwarded-Proto (and -For) are believed from these proxies only.
forwarded_allow_ips = os.environ.get("FORWARDED_ALLOW_IPS", "") or "127.0.0.1,::1"

# No access log: the console's own request line (beeos_console.core.requestlog) has
# the request id, user and view besides. gunicorn's messages go through the same
# formatter, to stderr.
accesslog = None
errorlog = "-"
_log_format = os.environ.get("LOG_FORMAT", "") or "json"
logconfig_dict = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"console": requestlog.formatter_config(_log_format)},
    "handlers": {
        "console": {"class": "logging.StreamHandler", "formatter": "console"},
        "error_console": {"class": "logging.StreamHandler", "formatter": "console"},
    },
    "root": {"level": "INFO", "handlers": ["console"]},
    "loggers": {
        "gunicorn.error": {"level": "INFO", "handlers": [], "propagate": True},
        "gunicorn.access": {"level": "INFO", "handlers": [], "propagate": False},
    },
}

# gunicorn's control socket sits at one fixed path per user ($XDG_RUNTIME_DIR or
# ~/.gunicorn): a second console on the machine would take it over. Not used.
control_socket_disable = True
# The heartbeat file: in memory where there is /dev/shm (a container's disk-backed
# /tmp can stall it).
if os.path.isdir("/dev/shm"):
    worker_tmp_dir = "/dev/shm"

# --- Server hooks --------------------------------------------------------------


def child_exit(server: Any, worker: Any) -> None:
    """Under PROMETHEUS_MULTIPROC_DIR every worker writes its own metrics file there; a
    dead one's live gauges go with it, its counters stay (beeos_console.metrics)."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        multiprocess.mark_process_dead(worker.pid)
