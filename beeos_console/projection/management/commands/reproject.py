"""`manage.py reproject`: rewrite stored projections from today's rules, audited per row.

A dry run by default: it lists what would change. ``--apply`` writes, one audit
entry per changed row (actor: the system, ``reproject (command line)``).
``--outdated`` limits it to rows stamped by an older table version — the step
to run after deploying a ``PROJECTION_VERSION`` bump. Exit status 0 either way.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from beeos_console.auditlog.services import Actor
from beeos_console.mirror.states import PROJECTION_VERSION
from beeos_console.projection import reprojection

ACTOR = Actor.system("reproject (command line)")
SHOWN = 10


class Command(BaseCommand):
    help = "Re-project stored rows from today's rules (dry run unless --apply); audited."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument(
            "--apply", action="store_true", help="Write the changes (default: a dry run)."
        )
        parser.add_argument(
            "--outdated",
            action="store_true",
            help=f"Only rows stamped by a table version older than v{PROJECTION_VERSION}.",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        apply = options["apply"]
        result = reprojection.run(
            actor=ACTOR,
            apply=apply,
            progress=self.stdout.write,
            outdated_only=options["outdated"],
        )
        for change in result["changes"][:SHOWN]:
            fields = ", ".join(f"{k} {v[0]!r} → {v[1]!r}" for k, v in change["changes"].items())
            label = f"{change['kind']} {change['id']} (raw {change['raw']!r})"
            self.stdout.write(f"  {label}: {fields}")
        if result["total"] > SHOWN:
            self.stdout.write(f"  … and {result['total'] - SHOWN:,} more")
        counts = ", ".join(f"{v:,} {k}s" for k, v in sorted(result["counts"].items())) or "no rows"
        if apply:
            self.stdout.write(
                self.style.SUCCESS(f"Re-projected {counts} to table v{PROJECTION_VERSION}.")
            )
        else:
            self.stdout.write(f"Dry run: {counts} would change. Run with --apply to write them.")
