"""`manage.py apply_webhooks`: apply the queued webhook events, in batches.

Without ``--loop``: drain what is queued now, print the figures, exit (a backlog
after an outage, benchmarks). With ``--loop``: keep applying, polling an empty
inbox every ``--interval`` seconds, until SIGTERM/SIGINT (finishes its batch
first). Any number can run at once: workers share the backlog (SKIP LOCKED) and
each object's events still apply in received order. A worker killed mid-batch
loses nothing: its transaction rolls back and the events are claimed again.
"""

from __future__ import annotations

import signal
import time
from typing import Any

import psycopg
from django.conf import settings
from django.core.management.base import BaseCommand
from django.db import DatabaseError, close_old_connections

from beeos_console.upstream import inbox


class Command(BaseCommand):
    help = (
        "Apply queued BeeOS webhook events through the set-based write path, in batches: "
        "drain and exit, or keep going with --loop."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument(
            "--loop", action="store_true", help="Keep applying until stopped (SIGTERM/SIGINT)."
        )
        parser.add_argument(
            "--interval",
            type=float,
            default=0.5,
            metavar="SECONDS",
            help="With --loop: how often to look at an empty inbox (default 0.5).",
        )
        parser.add_argument(
            "--batch",
            type=int,
            default=None,
            metavar="N",
            help="Events per batch, one transaction each (default: WEBHOOK_APPLY_BATCH, 1000).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        self.running = True
        batch = max(1, options["batch"] or settings.WEBHOOK_APPLY_BATCH)
        if not options["loop"]:
            started = time.monotonic()
            report = inbox.drain(limit=batch)
            self._report(report, time.monotonic() - started)
            return
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, self._stop)
        verbosity = options["verbosity"]
        while self.running:
            close_old_connections()
            started = time.monotonic()
            try:
                report = inbox.apply_batch(batch)
            except (DatabaseError, psycopg.Error) as exc:
                # The database went away: nothing was marked (one transaction per batch).
                self.stderr.write(f"apply_webhooks: {exc}; retrying in {options['interval']} s")
                report = inbox.Applied()
            if verbosity > 1 and report.claimed:
                self._report(report, time.monotonic() - started)
            if self.running and report.claimed == report.deferred:
                time.sleep(options["interval"])  # nothing (else) to do for now

    def _stop(self, signum: int, frame: Any) -> None:
        self.running = False

    def _report(self, report: inbox.Applied, seconds: float) -> None:
        rate = report.applied / seconds if seconds > 0 else 0.0
        outcomes = ", ".join(f"{n} {name}" for name, n in sorted(report.outcomes.items()))
        self.stdout.write(
            f"applied {report.applied} events ({outcomes or 'none'}), failed {report.failed}, "
            f"in {seconds:.2f} s ({rate:,.0f} events/s)"
        )
