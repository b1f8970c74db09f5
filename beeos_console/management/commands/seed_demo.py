"""`manage.py seed_demo`: demo users and a few hundred realistic BeeOS objects.

Idempotent: the demo's "now" (its anchor) is fixed the first time and read
back afterwards, so a second run regenerates identical snapshots and the
write path reports them unchanged. Passwords are printed once, on creation.
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

from beeos_console import roles
from beeos_console.audit import Actor
from beeos_console.demo import DemoBuilder, iso
from operations.services import ingest_runtime_operation, ingest_runtime_operation_event
from tasks import services as task_services
from tasks.models import Task

ANCHOR_KEY = "demo_anchor"
DEMO_USERS = (
    # username, role, superuser
    ("admin", roles.ADMIN, True),
    ("operator", roles.OPERATOR, False),
    ("support", roles.SUPPORT, False),
)


class Command(BaseCommand):
    help = "Create the demo users and demo tasks, messages and runtime operations (idempotent)."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--no-users", action="store_true", help="Only the mirrored data.")

    def handle(self, *args: Any, **options: Any) -> None:
        if not options["no_users"]:
            self._users()
        anchor = self._anchor()
        data = DemoBuilder(anchor).build()
        # The anchor rides on the first demo task so that later runs find it.
        data.openapi_tasks[0]["metadata"][ANCHOR_KEY] = iso(anchor)
        actor = Actor.system("seed_demo")
        counts: Counter[str] = Counter()
        batches = (
            ("openapi tasks", data.openapi_tasks, task_services.ingest_openapi_task),
            ("a2a tasks", data.a2a_tasks, task_services.ingest_a2a_task),
            ("product tasks", data.product_tasks, task_services.ingest_product_task),
            ("messages", data.messages, task_services.ingest_message),
            ("operations", data.operations, ingest_runtime_operation),
            ("operation events", data.events, ingest_runtime_operation_event),
        )
        for label, records, ingest in batches:
            local: Counter[str] = Counter()
            with transaction.atomic():
                for record in records:
                    local[ingest(record, actor=actor).outcome] += 1
            counts.update(local)
            summary = ", ".join(f"{k} {v}" for k, v in sorted(local.items()))
            self.stdout.write(f"{label:>17}: {len(records):4d} ({summary})")
        total = ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
        self.stdout.write(self.style.SUCCESS(f"Demo data ready (anchor {iso(anchor)}): {total}"))

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
