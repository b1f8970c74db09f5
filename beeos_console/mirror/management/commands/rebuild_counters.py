"""`manage.py rebuild_counters`: recompute the dashboard's status counters from the tables."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from beeos_console.mirror import agent_counters, counters, registry


class Command(BaseCommand):
    help = "Recompute the maintained status counters (full table scans; run off-peak)."

    def handle(self, *args: Any, **options: Any) -> None:
        for kind in registry.kinds():
            for counter, column in kind.counters.items():
                buckets = counters.rebuild(counter, kind.model, column)
                self.stdout.write(f"{counter}: {buckets} hour buckets")
            if kind.agent_counted:
                rows = agent_counters.rebuild(kind.model)
                self.stdout.write(f"{kind.name} per agent: {rows} counter rows")
