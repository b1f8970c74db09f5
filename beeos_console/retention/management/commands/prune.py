"""`manage.py prune --older-than 90d [--dry-run] [--batch-size N]`: retention.

Removes terminal tasks (with their messages and artifacts) and terminal runtime
operations (with their events) whose last update is older than the period, in
short transactions of ``--batch-size`` rows; keeps anything an open cancel
request or a running bulk cancel refers to; keeps the counters and the audit
log true (audit entries are never removed: one per batch names what went, one
per run sums it up). ``--dry-run`` reports what would go and writes nothing.
"""

from __future__ import annotations

import time
from typing import Any

from django.core.management.base import BaseCommand, CommandError
from django.utils.translation import gettext as _

from beeos_console.auditlog.services import Actor
from beeos_console.retention import services
from beeos_console.retention.durations import parse_period
from beeos_console.retention.kinds import KEEP_REASONS, REMOVED_LABELS

ACTOR = Actor.system("prune (command line)")
PROGRESS_EVERY = 2.0  # seconds between progress lines


class Command(BaseCommand):
    help = "Remove terminal tasks and operations older than a period (audited, in batches)."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument(
            "--older-than",
            required=True,
            help="Last update older than this: a whole number and a unit, e.g. 90d, 12h, 2w.",
        )
        parser.add_argument(
            "--dry-run", action="store_true", help="Report what would be removed; change nothing."
        )
        parser.add_argument(
            "--batch-size",
            default=str(services.DEFAULT_BATCH),
            help=f"Rows per transaction (default {services.DEFAULT_BATCH}, "
            f"at most {services.MAX_BATCH:,}).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            older_than = parse_period(options["older_than"])
        except ValueError as exc:
            raise CommandError(_("--older-than: %(problem)s") % {"problem": exc}) from exc
        batch_size = self._batch_size(options["batch_size"])
        dry_run = options["dry_run"]
        last = [time.monotonic()]

        def progress(report: services.PruneReport) -> None:
            if time.monotonic() - last[0] >= PROGRESS_EVERY:
                last[0] = time.monotonic()
                self.stderr.write(f"  … {report.batches:,} batches: {_counts(report.removed)}")

        report = services.prune(
            older_than=older_than,
            actor=ACTOR,
            dry_run=dry_run,
            batch_size=batch_size,
            progress=progress,
        )
        head = _("Dry run: would remove") if dry_run else _("Removed")
        self.stdout.write(
            _("%(head)s (last update before %(cutoff)s): %(counts)s.")
            % {
                "head": head,
                "cutoff": report.cutoff.isoformat(timespec="seconds"),
                "counts": _counts(report.removed),
            }
        )
        for key, count in sorted(report.kept.items()):
            label, reason = key.split(": ", 1)
            self.stdout.write(
                _("  kept %(count)s %(label)s: %(why)s")
                % {"count": f"{count:,}", "label": label, "why": KEEP_REASONS[reason]}
            )
        self.stdout.write(
            _("%(batches)s batches of at most %(size)s rows in %(seconds).1f s; ")
            % {"batches": f"{report.batches:,}", "size": batch_size, "seconds": report.seconds}
            + (
                _("longest batch %(ms).0f ms (reads only).")
                if dry_run
                else _("longest transaction %(ms).0f ms.")
            )
            % {"ms": report.longest_batch * 1000}
        )
        if not dry_run:
            self.stdout.write(_("Audited: one entry per batch and one for this run."))

    def _batch_size(self, value: str) -> int:
        try:
            size = int(value)
        except ValueError:
            size = 0
        if not 1 <= size <= services.MAX_BATCH:
            raise CommandError(
                _("--batch-size must be a whole number from 1 to %(most)s, not %(value)r.")
                % {"most": f"{services.MAX_BATCH:,}", "value": value}
            )
        return size


def _counts(removed: dict[str, int]) -> str:
    return ", ".join(f"{removed.get(label, 0):,} {label}" for label in REMOVED_LABELS)
