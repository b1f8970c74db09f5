"""`manage.py resolve_uncertain_cancels`: re-read the uncertain cancels that are due."""

from __future__ import annotations

import time
from collections import Counter
from typing import Any

from django.core.management.base import BaseCommand

from beeos_console.cancels.engine import NOT_DUE, RECHECK_BATCH, resolve_uncertain_cancels


class Command(BaseCommand):
    help = (
        "Re-read every uncertain cancel whose next re-read is due (1, 5, 15, 60 minutes, "
        "then daily for a week after the uncertain answer) and record what its object shows: "
        "cancelled, completed or failed (resolved, audited), or still running (next re-read "
        "scheduled; after the week it stays open, flagged as given up). The worker does this "
        "on its own; this command is for cron or catching up."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument(
            "--every", type=float, metavar="SECONDS", help="Sweep every SECONDS, forever."
        )
        parser.add_argument(
            "--limit", type=int, default=RECHECK_BATCH, help="Due cancels per sweep."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        while True:
            rechecks = resolve_uncertain_cancels(limit=options["limit"])
            for item in rechecks:
                if item.outcome != NOT_DUE:
                    self.stdout.write(
                        f"  {item.object_kind} {item.object_id}: {item.outcome} — {item.message}"
                    )
            counts = Counter(r.outcome for r in rechecks if r.outcome != NOT_DUE)
            summary = ", ".join(f"{n} {outcome}" for outcome, n in sorted(counts.items()))
            self.stdout.write(
                self.style.SUCCESS(
                    f"{sum(counts.values())} uncertain cancels re-read"
                    + (f": {summary}" if summary else "")
                )
            )
            if not options["every"]:
                return
            time.sleep(options["every"])
