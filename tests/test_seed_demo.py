"""`seed_demo` covers every vocabulary value, makes the demo users, and is idempotent."""

from __future__ import annotations

from datetime import timedelta
from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from beeos_console.models import AuditEntry
from operations import states as op_states
from operations.models import RuntimeOperation, RuntimeOperationEvent
from tasks import states as task_states
from tasks.models import Message, Task

pytestmark = pytest.mark.django_db


@pytest.fixture
def seeded() -> str:
    out = StringIO()
    call_command("seed_demo", stdout=out)
    return out.getvalue()


def counts() -> dict[str, int]:
    return {
        "tasks": Task.objects.count(),
        "messages": Message.objects.count(),
        "operations": RuntimeOperation.objects.count(),
        "events": RuntimeOperationEvent.objects.count(),
        "audit": AuditEntry.objects.count(),
        "users": get_user_model().objects.count(),
    }


def test_second_run_duplicates_nothing_and_loses_nothing(seeded):
    first = counts()
    assert first["tasks"] >= 200 and first["operations"] >= 100
    out = StringIO()
    call_command("seed_demo", stdout=out)
    assert counts() == first
    assert "created" not in out.getvalue().split("Demo data ready")[1]
    assert "password unchanged" in out.getvalue()


def test_demo_users_get_their_roles_and_passwords_once(seeded):
    User = get_user_model()
    assert seeded.count("with password:") == 3
    assert User.objects.get(username="admin").is_superuser
    for name in ("admin", "operator", "support"):
        assert User.objects.get(username=name).groups.filter(name=name).exists()


def test_every_raw_value_of_every_vocabulary_is_present(seeded):
    openapi = set(Task.objects.filter(protocol="openapi").values_list("raw_state", flat=True))
    assert set(task_states.OPENAPI_WIRE_VALUES) <= openapi
    a2a = set(Task.objects.filter(protocol="a2a").values_list("raw_state", flat=True))
    a2a_json = {task_states.A2A_ENUM_TO_JSON.get(v, v) for v in a2a}
    assert set(task_states.A2A_JSON_VALUES) | set(task_states.A2A_INTERNAL_VALUES) <= a2a_json
    assert a2a & set(task_states.A2A_ENUM_TO_JSON), "some A2A tasks use the v1 enum names"
    product = set(Task.objects.filter(protocol="product").values_list("raw_state", flat=True))
    assert set(task_states.PRODUCT_TABLE) <= product
    assert set(task_states.MESSAGE_STATES) <= set(Message.objects.values_list("state", flat=True))
    stops = set(Message.objects.values_list("stop_reason", flat=True))
    assert set(task_states.STOP_REASONS) <= stops
    ops = RuntimeOperation.objects
    assert set(op_states.STATUSES) <= set(ops.values_list("raw_status", flat=True))
    assert set(op_states.EFFECT_STATES) <= set(ops.values_list("effect_state", flat=True))
    assert set(op_states.PROJECTION_STATES) <= set(ops.values_list("projection_state", flat=True))
    assert set(op_states.RETRY_MODES) <= set(ops.values_list("error_retry_mode", flat=True))


def test_demo_has_the_situations_operators_meet(seeded):
    assert Task.objects.filter(status="unmapped").exists()
    assert RuntimeOperation.objects.filter(status="unmapped").exists()
    assert Task.objects.filter(outcome_certainty="uncertain").exists()
    assert Task.objects.filter(raw_state__in=["cancelled", "TASK_STATE_CANCELLED"]).exists()
    # Stuck: processing and started more than two hours before the demo's "now".
    newest = Task.objects.order_by("-created_at").values_list("created_at", flat=True).first()
    assert Task.objects.filter(
        status="processing", created_at__lt=newest - timedelta(hours=2)
    ).exists()
    replies = Message.objects.filter(type="agent_reply", task__isnull=False)
    assert replies.filter(state="completed", task__status="completed").exists()
    assert Message.objects.filter(body__contains="<script>").exists()
