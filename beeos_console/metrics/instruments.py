"""Process metrics: what one process saw happen (requests, records, events, cancels, jobs).

Registered in prometheus_client's default registry. Without
``PROMETHEUS_MULTIPROC_DIR`` they live in this process's memory; with it (gunicorn,
several workers, the db_worker beside them) every process writes its own file in
that folder and a scrape sums the files (``exposition.scrape_registry``). Labels
take bounded values only: view names, never raw paths.
"""

from __future__ import annotations

from prometheus_client import Counter, Histogram

# Seconds; from a cached list page (a few ms) to a CSV export or a slow upstream call.
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)

REQUEST_SECONDS = Histogram(
    "beeos_console_http_request_duration_seconds",
    "Time to answer one HTTP request, by view name (never the raw path), method and status class.",
    ["view", "method", "status"],
    buckets=LATENCY_BUCKETS,
)
INGEST_RECORDS = Counter(
    "beeos_console_ingest_records",
    "Records sent to POST /api/v1/ingest/, by record kind and the result answered for it.",
    ["kind", "result"],
)
WEBHOOK_EVENTS = Counter(
    "beeos_console_webhook_events",
    "Calls to the BeeOS webhook receiver, by the result it answered (http_<code> when it "
    "refused the call: 401 bad signature, 400 invalid, 503 not configured).",
    ["result"],
)
CANCEL_ATTEMPTS = Counter(
    "beeos_console_cancel_attempts",
    "Cancel attempts that ended, by gateway and result (a replayed idempotency key is not "
    "an attempt).",
    ["gateway", "result"],
)
WORKER_JOBS_STARTED = Counter(
    "beeos_console_worker_jobs_started",
    "Background jobs (django-tasks) the db_worker started, by task.",
    ["task"],
)
WORKER_JOBS_FINISHED = Counter(
    "beeos_console_worker_jobs_finished",
    "Background jobs (django-tasks) that ended, by task and status (successful, failed).",
    ["task", "status"],
)
