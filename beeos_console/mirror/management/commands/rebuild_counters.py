"""`manage.py rebuild_counters`: recompute the dashboard's status counters from the tables."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from beeos_console.mirror import counters
from operations.models import RuntimeOperation
from tasks.models import Task


class Command(BaseCommand):
    help = "Recompute the maintained status counters (full table scans; run off-peak)."

    def handle(self, *args: Any, **options: Any) -> None:
        for kind, model, field in (
            (counters.TASK, Task, "status"),
            (counters.OPERATION, RuntimeOperation, "status"),
            (counters.OPERATION_RAW, RuntimeOperation, "raw_status"),
        ):
            buckets = counters.rebuild(kind, model, field)
            self.stdout.write(f"{kind}: {buckets} hour buckets")
