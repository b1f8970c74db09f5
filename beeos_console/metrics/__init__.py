"""Prometheus metrics at ``/metrics`` (README, "Deploying" → "Metrics").

Two kinds of numbers, never mixed:

- **process metrics** (``instruments``): request latency, ingest records and webhook
  events by result, worker jobs started/finished. Each process counts its own;
  under gunicorn (``PROMETHEUS_MULTIPROC_DIR``) every process writes its own file
  and a scrape sums them.
- **database gauges** (``sources``): read from the database once per scrape by the
  scraped process, from maintained counters and bounded, indexed queries only.
  Add one with ``@sources.source("name")`` (``database.py`` holds the built-in ones).
"""
