"""`manage.py seed_demo`: demo users and a few hundred realistic BeeOS objects.

Idempotent: the demo's "now" (its anchor) is fixed the first time and read
back afterwards, so a second run regenerates identical snapshots and the
write path reports them unchanged. Passwords are printed once, on creation.
On an existing database it first re-projects the rows an older projection
table stamped (audited, as the system), so the demo shows today's rules.

Each kind's records go through the ingest API's set-based write path (the same
storage rules as one record at a time, in a few statements per kind), so a seed
costs a few hundred round trips, not the one-record path's six per record.
"""

from __future__ import annotations

import datetime as dt
import secrets
from collections import Counter
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management.base import BaseCommand
from django.db import transaction
from django.utils import timezone

from beeos_console.auditlog import services as auditlog
from beeos_console.auditlog.services import Actor
from beeos_console.cancels.engine import schedule_rechecks
from beeos_console.cancels.models import CancelRequest
from beeos_console.core import roles
from beeos_console.demo.builder import DemoBuilder, iso
from beeos_console.mirror import registry
from beeos_console.mirror.batch import write_batch
from beeos_console.mirror.edge import IngestResult
from beeos_console.mirror.states import PROJECTION_VERSION
from beeos_console.projection import reprojection
from beeos_console.upstream.gateway import a2a_error_answer
from tasks.models import Task
from tasks.services.rules import state_summary

ANCHOR_KEY = "demo_anchor"
DEMO_USERS = (
    # username, role, superuser
    ("admin", roles.ADMIN, True),
    ("operator", roles.OPERATOR, False),
    ("support", roles.SUPPORT, False),
)


def _write(kind: str, records: list[dict[str, Any]], actor: Actor) -> list[IngestResult]:
    """One kind's records, validated (an invalid one raises), then written set-based in
    one transaction: the ingest API's path (``mirror.batch.write_batch``)."""
    parse = registry.record_kinds()[kind].parse
    items = [(index, parse(data)) for index, data in enumerate(records)]
    with transaction.atomic():
        results = write_batch({kind: items}, actor)
    return [results[index] for index, _ in items]


class Command(BaseCommand):
    help = "Create the demo users and demo tasks, messages and runtime operations (idempotent)."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--no-users", action="store_true", help="Only the mirrored data.")
        parser.add_argument(
            "--with-unmapped",
            action="store_true",
            help="Also raw values no table knows, to see the projection audit fail on them.",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if not options["no_users"]:
            self._users()
        actor = Actor.system("seed_demo")
        self._reproject_outdated(actor)
        anchor = self._anchor()
        data = DemoBuilder(anchor, with_unmapped=options["with_unmapped"]).build()
        # The anchor rides on the first demo task so that later runs find it.
        data.openapi_tasks[0]["metadata"][ANCHOR_KEY] = iso(anchor)
        counts: Counter[str] = Counter()
        batches = (
            ("openapi tasks", data.openapi_tasks, "openapi_task"),
            ("a2a tasks", data.a2a_tasks, "a2a_task"),
            ("product tasks", data.product_tasks, "product_task"),
            ("messages", data.messages, "message"),
            ("task updates", data.openapi_task_updates, "openapi_task"),
            ("operations", data.operations, "runtime_operation"),
            ("operation events", data.events, "runtime_operation_event"),
        )
        for label, records, kind in batches:
            local = Counter(str(result.outcome) for result in _write(kind, records, actor))
            counts.update(local)
            summary = ", ".join(f"{k} {v}" for k, v in sorted(local.items()))
            self.stdout.write(f"{label:>17}: {len(records):4d} ({summary})")
        local = Counter(self._console_cancel(record) for record in data.console_cancels)
        counts.update(local)
        summary = ", ".join(f"{k} {v}" for k, v in sorted(local.items()))
        self.stdout.write(f"{'console cancels':>17}: {len(data.console_cancels):4d} ({summary})")
        total = ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
        self.stdout.write(self.style.SUCCESS(f"Demo data ready (anchor {iso(anchor)}): {total}"))

    def _reproject_outdated(self, actor: Actor) -> None:
        """Rows an older table version stamped: today's rules, one audit entry each."""
        result = reprojection.run(actor=actor, apply=True, outdated_only=True)
        if result["total"]:
            self.stdout.write(
                f"Re-projected {result['total']} rows stamped before table v{PROJECTION_VERSION}."
            )

    @transaction.atomic
    def _console_cancel(self, record: dict[str, Any]) -> str:
        """A cancel the console recorded as the gateway would have (audited once, on creation).

        The upstream answer is read by the BeeOS gateway's own rules, so its words,
        outcome and upstream fields are what a real answer would leave.
        """
        if CancelRequest.objects.filter(idempotency_key=record["idempotency_key"]).exists():
            return "unchanged"
        task = Task.objects.get(protocol=record["protocol"], task_id=record["task_id"])
        answer = a2a_error_answer(record["answer"], record["http_status"])
        assert answer is not None, "the demo's answer carries a JSON-RPC error"
        upstream = {"outcome": answer.outcome, **answer.upstream, "body": record["answer"]}
        request = CancelRequest.objects.create(
            idempotency_key=record["idempotency_key"],
            object_kind="task",
            protocol=task.protocol,
            object_id=task.task_id,
            requested_by=record["requested_by"],
            reason=record["reason"],
            gateway="beeos",
            state=CancelRequest.State.UNCERTAIN,
            result=answer.outcome,
            message=answer.message,
            upstream_status=answer.http_status,
            upstream=upstream,
            finished_at=timezone.now(),
        )
        # Like any uncertain cancel: the worker re-reads the task on the schedule.
        schedule_rechecks(request)
        request.save(update_fields=["checks", "next_check_at"])
        # The cancel changed nothing: the task still shows what it showed.
        state = state_summary(task)
        auditlog.record(
            Actor(record["requested_by"]),
            "task.cancel",
            "task",
            task.task_id,
            before=state,
            after=state,
            reason=record["reason"],
            detail={
                "result": answer.outcome,
                "message": answer.message,
                "protocol": task.protocol,
                "idempotency_key": request.idempotency_key,
                "gateway": request.gateway,
                "upstream": {"status": answer.http_status, **upstream},
                "bulk": None,
                "demo": True,
            },
        )
        return "created"

    def _anchor(self) -> dt.datetime:
        stored = (
            Task.objects.filter(metadata__has_key=ANCHOR_KEY)
            .values_list("metadata", flat=True)
            .first()
        )
        if stored:
            return dt.datetime.fromisoformat(stored[ANCHOR_KEY].replace("Z", "+00:00"))
        now = dt.datetime.now(dt.UTC)
        return now.replace(second=0, microsecond=0)

    def _users(self) -> None:
        User = get_user_model()
        for username, role, superuser in DEMO_USERS:
            user = User.objects.filter(username=username).first()
            group, _ = Group.objects.get_or_create(name=role)
            if user is None:
                password = secrets.token_urlsafe(12)
                user = User.objects.create_user(
                    username=username,
                    password=password,
                    is_staff=superuser,
                    is_superuser=superuser,
                )
                self.stdout.write(
                    f"Created demo user {username!r} (role {role}) with password: {password}"
                )
            else:
                self.stdout.write(f"Demo user {username!r} exists; password unchanged.")
            user.groups.add(group)
