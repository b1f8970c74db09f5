"""Database gauges: the registry of sources, read once per scrape.

A *source* is a function ``(now) -> iterable of prometheus_client metric
families`` that reads the database cheaply: maintained counters, or indexed
queries bounded by a ``LIMIT`` (``capped_count``), never a COUNT over a big
table. Adding one is one registration::

    @source("webhook_backlog")
    def webhook_backlog(now: dt.datetime) -> Iterator[Metric]:
        yield gauge("beeos_console_webhook_backlog", "Events stored, not yet applied.", n)

The scraped process runs every source itself (one process, however many gunicorn
workers there are), so these numbers are never summed across processes. A source
that fails (its table missing, a statement timeout) is reported by
``beeos_console_metrics_source_up{source}`` = 0; the others are still served.
"""

from __future__ import annotations

import datetime as dt
import logging
import time
from collections.abc import Callable, Iterable, Iterator, Mapping

from django.conf import settings
from django.db import DatabaseError
from django.utils import timezone
from prometheus_client.metrics_core import GaugeMetricFamily, Metric

logger = logging.getLogger(__name__)

Source = Callable[[dt.datetime], Iterable[Metric]]
SOURCES: dict[str, Source] = {}


def source(name: str) -> Callable[[Source], Source]:
    """Register a database source under ``name`` (the ``source`` label of its health)."""

    def register(function: Source) -> Source:
        if name in SOURCES and SOURCES[name] is not function:
            raise ValueError(f"A metrics source named {name!r} is already registered.")
        SOURCES[name] = function
        return function

    return register


def count_cap() -> int:
    """How far a capped count counts (``METRICS_COUNT_CAP``): exact below, the cap above."""
    return int(settings.METRICS_COUNT_CAP)


def gauge(
    name: str,
    documentation: str,
    value: float | None = None,
    *,
    labels: Mapping[tuple[str, ...], float] | None = None,
    label_names: tuple[str, ...] = (),
) -> GaugeMetricFamily:
    """One gauge family: a single ``value``, or one sample per label tuple in ``labels``."""
    family = GaugeMetricFamily(name, documentation, value=value, labels=label_names or None)
    for label_values, sample in (labels or {}).items():
        family.add_metric(list(label_values), sample)
    return family


def epoch(value: dt.datetime | None) -> float | None:
    return value.timestamp() if value is not None else None


class DatabaseCollector:
    """Every registered source, run in order, each timed and guarded."""

    def __init__(self, sources: Mapping[str, Source] | None = None) -> None:
        self.sources = SOURCES if sources is None else sources

    def describe(self) -> list[Metric]:
        return []  # nothing to check at registration: names are fixed in the sources

    def collect(self) -> Iterator[Metric]:
        now = timezone.now()
        up = GaugeMetricFamily(
            "beeos_console_metrics_source_up",
            "1 when this database source answered in this scrape, 0 when it failed.",
            labels=["source"],
        )
        seconds = GaugeMetricFamily(
            "beeos_console_metrics_source_duration_seconds",
            "Time this database source took in this scrape.",
            labels=["source"],
        )
        for name, function in self.sources.items():
            started = time.perf_counter()
            try:
                families = list(function(now))
            except DatabaseError:
                logger.exception("metrics source %s failed", name)
                families, ok = [], 0
            else:
                ok = 1
            up.add_metric([name], ok)
            seconds.add_metric([name], time.perf_counter() - started)
            yield from families
        yield up
        yield seconds
        yield gauge(
            "beeos_console_metrics_count_cap",
            "Capped counts (open, stuck, backlog) are exact below this value and equal "
            "to it above (METRICS_COUNT_CAP).",
            count_cap(),
        )
