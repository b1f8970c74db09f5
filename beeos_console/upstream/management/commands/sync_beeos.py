"""`manage.py sync_beeos`: pull tasks, messages, runtime operations and A2A tasks from BeeOS."""

from __future__ import annotations

import time
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from beeos_console.upstream import clients
from beeos_console.upstream.sync import NOT_FOUND, Syncer


class Command(BaseCommand):
    help = (
        "Pull what changed in BeeOS since the last pass: the caller's new and changed tasks "
        "(with messages), the tasks webhooks flagged, the active runtime operations of the "
        "configured instances (beeos-sdk) and the A2A tasks the configured agents sent and "
        "received (beeos-cloud-sdk), plus a few open objects in turn (BEEOS_SYNC_SWEEP). "
        "Objects BeeOS answers 404 for are marked 'not found upstream', not errors; "
        "with --once the exit status is 1 when a read failed (transport, 401/403, 5xx)."
    )

    def add_arguments(self, parser: Any) -> None:
        mode = parser.add_mutually_exclusive_group()
        mode.add_argument("--once", action="store_true", help="One pass, then exit (default).")
        mode.add_argument(
            "--every", type=float, metavar="SECONDS", help="Run a pass every SECONDS, forever."
        )
        parser.add_argument(
            "--instance",
            action="append",
            dest="instances",
            metavar="ID",
            help="Instance to watch (repeatable); default: BEEOS_INSTANCES.",
        )
        parser.add_argument(
            "--a2a-agent",
            action="append",
            dest="a2a_agents",
            metavar="ID",
            help="Agent whose A2A tasks to list (repeatable); default: BEEOS_A2A_AGENTS. "
            "Needs BEEOS_CLOUD_URL.",
        )
        parser.add_argument(
            "--a2a-counterpart",
            default="",
            metavar="ID",
            help="Only the A2A tasks exchanged with this other agent (a2a.listTasks agent_id).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            client = clients.platform_client()
        except clients.UpstreamNotConfigured as exc:
            raise CommandError(f"{exc} The sync needs the BeeOS API (BEEOS_API_URL).") from exc
        if (options["a2a_agents"] or settings.BEEOS_A2A_AGENTS) and not clients.cloud_configured():
            self.stderr.write(
                "A2A agents are configured but BEEOS_CLOUD_URL is not set: A2A tasks are skipped."
            )
        passes = 0
        while True:
            passes += 1
            started = time.monotonic()
            syncer = Syncer(
                client,
                instances=options["instances"],
                a2a_agents=options["a2a_agents"],
                a2a_counterpart=options["a2a_counterpart"],
                progress=self.stdout.write,
            )
            report = syncer.run()
            elapsed = time.monotonic() - started
            for line in report.errors[:20]:
                self.stderr.write(f"  error: {line}")
            self.stdout.write(
                self.style.SUCCESS(
                    f"sync pass {passes} done in {elapsed:.1f} s: {report.summary()}"
                )
            )
            if report.counts.get(NOT_FOUND):
                self.stdout.write(
                    f"  {report.counts[NOT_FOUND]} objects {NOT_FOUND} (404): marked, not "
                    "re-read each pass; list them with ?upstream_missing=true"
                )
            if not options["every"]:
                # Vanished objects are the upstream's truth, not a failure of this run.
                if report.failed:
                    raise CommandError(f"{report.counts['errors']} upstream errors (see above).")
                return
            time.sleep(max(options["every"] - elapsed, 0))
