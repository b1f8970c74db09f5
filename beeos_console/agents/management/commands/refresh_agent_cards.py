"""`manage.py refresh_agent_cards [agent …]`: re-read A2A agent cards from the Cloud now."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from beeos_console.agents import services


class Command(BaseCommand):
    help = (
        "Re-read the A2A agent cards of the given agents (default: the configured A2A "
        "agents and every agent whose card was read before) and store the outcome."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("agents", nargs="*", help="agent ids (default: the scheduled ones)")

    def handle(self, *args: Any, **options: Any) -> None:
        outcomes = services.refresh_cards(options["agents"] or None)
        for agent_id, outcome in outcomes.items():
            self.stdout.write(f"{agent_id}: {outcome}")
