"""`manage.py score_agents [--every SECONDS]`: compute every agent's conformance scorecard."""

from __future__ import annotations

import time
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from beeos_console.agents import scorecard


class Command(BaseCommand):
    help = (
        "Compute the conformance scorecard of every agent from what the mirror holds "
        "(the background job's work, run here): once, or with --every SECONDS forever."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--every", type=float, metavar="SECONDS", help="Score again every SECONDS, forever."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        while True:
            started = time.monotonic()
            done = scorecard.score_agents(progress=self.stdout.write)
            elapsed = time.monotonic() - started
            self.stdout.write(
                self.style.SUCCESS(
                    f"scored {done['agents']:,} agents in {elapsed:.1f} s: "
                    f"{done['not_passing']:,} with a line that does not pass"
                )
            )
            if not options["every"]:
                return
            time.sleep(max(options["every"] - elapsed, 0))
