"""`manage.py audit_projections`: is every product status true to its raw state?

Exit status 0 when there is no drift, unmapped value or broken invariant, 1
otherwise (missing evidence, producer notes and rows of an older table version
are reported but do not fail it), so cron and monitoring can use it. Tables are
read set-based in primary-key ranges (``projection/sweep.py``), by ``--workers``
database sessions side by side; progress goes to the terminal.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandError
from django.utils.translation import gettext as _

from beeos_console.core.exports import csv_writer
from beeos_console.projection import audit as projection_audit
from beeos_console.projection.models import ProjectionJob

MAX_WORKERS = 8
CSV_COLUMNS = ("category", "kind", "protocol", "id", "raw", "status", "detail")


class Command(BaseCommand):
    help = "Audit the stored projections against today's rules; exit 1 on problems."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument(
            "--format",
            choices=("summary", "csv", "json"),
            default="summary",
            help="summary (default): counts and examples; csv: every finding; json: the report.",
        )
        parser.add_argument(
            "--chunk",
            type=int,
            default=projection_audit.SET_CHUNK,
            help="Rows per primary-key range (default %(default)s).",
        )
        parser.add_argument(
            "--workers",
            type=int,
            default=projection_audit.WORKERS,
            help="Database sessions reading ranges side by side (default %(default)s).",
        )
        parser.add_argument(
            "--no-save",
            action="store_true",
            help="Do not keep the report for the /audit/projections/ page.",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if options["chunk"] < 1 or not 1 <= options["workers"] <= MAX_WORKERS:
            raise CommandError(
                _("--chunk must be at least 1 and --workers from 1 to %(most)d.")
                % {"most": MAX_WORKERS}
            )
        fmt = options["format"]
        listener = None
        if fmt == "csv":
            writer = csv_writer(self.stdout)
            writer.writerow(CSV_COLUMNS)

            def listener(category: str, finding: dict[str, Any]) -> None:
                extra = {k: v for k, v in finding.items() if k not in CSV_COLUMNS[1:]}
                writer.writerow(
                    [
                        category,
                        finding.get("kind", ""),
                        finding.get("protocol", ""),
                        finding.get("id", ""),
                        finding.get("raw", ""),
                        finding.get("status", ""),
                        json.dumps(extra, default=str, sort_keys=True) if extra else "",
                    ]
                )

        progress = self.stderr.write if fmt != "summary" else self.stdout.write
        report = projection_audit.sweep(
            progress=progress,
            chunk=options["chunk"],
            workers=options["workers"],
            listener=listener,
            check_audit_chain=True,
        )
        if not options["no_save"]:
            ProjectionJob.objects.create(
                kind=ProjectionJob.Kind.AUDIT,
                state=ProjectionJob.State.FINISHED,
                requested_by="audit_projections (command line)",
                progress="done",
                report=report.to_json(),
                finished_at=report.finished_at,
            )
        if fmt == "json":
            self.stdout.write(json.dumps(report.to_json(), indent=2, default=str))
        elif fmt == "summary":
            self._summary(report)
        if report.failing:
            sys.exit(1)

    def _summary(self, report: projection_audit.AuditReport) -> None:
        scanned = ", ".join(f"{v:,} {k}" for k, v in report.scanned.items())
        self.stdout.write(f"Scanned {scanned or 'nothing'}.")
        for name, label, count, failing in report.summary_rows():
            mark = ("FAIL" if count else "ok  ") if failing else "note"
            self.stdout.write(f"  {mark} {label}: {count:,}")
            for example in report.categories[name].examples[:3] if count else []:
                said = example.get("note") or (
                    f"{example['field']} {example['value']!r}" if example.get("field") else ""
                )
                self.stdout.write(
                    f"         {example['kind']} {example['id']} "
                    f"(raw {example.get('raw')!r}, status {example.get('status')})"
                    + (f": {said}" if said else "")
                )
        for group in report.to_json()["unmapped_groups"][:10]:
            self.stdout.write(
                f"  unmapped {group['kind']}/{group['protocol']} value {group['raw_value']!r}: "
                f"{group['count']:,}"
            )
        verdict = "problems found" if report.failing else "all projections are true"
        style = self.style.ERROR if report.failing else self.style.SUCCESS
        self.stdout.write(style(f"Projection audit: {verdict}."))
