"""`manage.py refresh_agent_cards [--due | agent …]`: re-read A2A agent cards from the Cloud now."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from beeos_console.agents import services, tasks


class Command(BaseCommand):
    help = (
        "Re-read the A2A agent cards of the given agents (default: the configured A2A "
        "agents and every agent whose card was read before) and store the outcome. "
        "--due: only the cards the sync's schedule finds due (AGENT_CARD_REFRESH_SECONDS), "
        "what the worker's job reads: for cron when no worker runs."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("agents", nargs="*", help="agent ids (default: the scheduled ones)")
        parser.add_argument(
            "--due", action="store_true", help="only the cards due for a scheduled re-read"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if options["due"] and options["agents"]:
            raise CommandError("Give agent ids or --due, not both.")
        if options["due"]:  # the worker's job, run here (one reader at a time)
            outcomes = tasks.refresh_agent_cards.call()
        else:
            outcomes = services.refresh_cards(options["agents"] or None)
        for agent_id, outcome in outcomes.items():
            self.stdout.write(f"{agent_id}: {outcome}")
