"""Clock skew can't freeze an object (issue #13, point 7).

A snapshot stamped more than ``CONSOLE_MAX_CLOCK_SKEW`` in the future is stored
with a producer note; its stamp orders as now + skew, so the next real snapshot
still applies — through the one-record services and the batch path (an ingest
call with several records) alike. The projection audit lists such rows.
"""

from __future__ import annotations

import datetime as dt
import json

import pytest
from django.contrib.auth.models import Group
from django.core.exceptions import ImproperlyConfigured
from django.template.loader import render_to_string
from django.test import override_settings
from rest_framework.test import APIClient

from beeos_console.core import tokens
from beeos_console.mirror.edge import Outcome, is_older
from beeos_console.projection import audit as projection_audit
from beeos_console.projection.views import _summary_rows
from beeos_console.settings import env_duration
from operations.models import RuntimeOperation
from operations.services.write import ingest_runtime_operation
from tasks.models import Message, Task
from tasks.services.write import ingest_message, ingest_openapi_task

from .factories import FEEDER, iso, make_task, openapi_task, operation_snapshot

NOW = dt.datetime.now(dt.UTC)
FUTURE = NOW + dt.timedelta(days=2)


def task_data(task_id: str, status: str, stamp: dt.datetime) -> dict:
    return openapi_task(
        status, task_id=task_id, created_at=iso(NOW - dt.timedelta(hours=3)), updated_at=iso(stamp)
    )


@pytest.fixture
def feeder_api(django_user_model) -> APIClient:
    user = django_user_model.objects.create_user("skew-feeder")
    user.groups.add(Group.objects.get_or_create(name="feeder")[0])
    _, key = tokens.issue(user, "test")
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    return api


def ingest(api: APIClient, *records: tuple[str, dict]) -> list[dict]:
    body = {"records": [{"kind": kind, "data": data} for kind, data in records]}
    response = api.post("/api/v1/ingest/", data=json.dumps(body), content_type="application/json")
    assert response.status_code == 200, response.content
    return response.json()["results"]


class TestTheRule:
    def test_a_stored_stamp_in_the_future_makes_nothing_stale(self):
        assert not is_older(NOW, FUTURE)
        assert not is_older(NOW - dt.timedelta(days=1), FUTURE)

    def test_within_the_skew_the_stamps_order(self):
        near = NOW + dt.timedelta(minutes=4)
        assert is_older(NOW, near, now=NOW)
        assert not is_older(near, NOW, now=NOW)

    def test_an_incoming_future_stamp_counts_as_now_plus_skew(self):
        assert not is_older(FUTURE, NOW + dt.timedelta(minutes=5), now=NOW)

    def test_plainly_older_is_older_and_unknown_is_not(self):
        assert is_older(NOW - dt.timedelta(hours=2), NOW - dt.timedelta(hours=1))
        assert not is_older(None, NOW) and not is_older(NOW, None)

    @override_settings(CONSOLE_MAX_CLOCK_SKEW=dt.timedelta(days=3))
    def test_the_skew_is_the_setting(self):
        assert is_older(NOW, FUTURE)  # two days ahead is within three days of skew

    @pytest.mark.parametrize(
        ("value", "seconds"),
        [("300", 300), ("90s", 90), ("5m", 300), ("1h", 3600), ("00:05:00", 300), ("PT2M", 120)],
    )
    def test_the_setting_reads_seconds_or_a_duration(self, monkeypatch, value, seconds):
        monkeypatch.setenv("CONSOLE_MAX_CLOCK_SKEW", value)
        assert env_duration("CONSOLE_MAX_CLOCK_SKEW", dt.timedelta(0)).total_seconds() == seconds

    @pytest.mark.parametrize("value", ["soon", "-5", "5 parsecs"])
    def test_a_bad_setting_is_refused(self, monkeypatch, value):
        monkeypatch.setenv("CONSOLE_MAX_CLOCK_SKEW", value)
        with pytest.raises(ImproperlyConfigured, match="CONSOLE_MAX_CLOCK_SKEW"):
            env_duration("CONSOLE_MAX_CLOCK_SKEW", dt.timedelta(0))


@pytest.mark.django_db
class TestOneRecordServices:
    def test_a_future_stamp_is_stored_with_a_note_and_the_next_real_snapshot_applies(self):
        first = ingest_openapi_task(task_data("tsk_skew", "queued", FUTURE), actor=FEEDER)
        assert first.outcome == Outcome.CREATED
        assert "stamped in the future (clock skew)" in first.note
        assert Task.objects.get(task_id="tsk_skew").updated_at == FUTURE  # kept as sent
        later = ingest_openapi_task(task_data("tsk_skew", "running", NOW), actor=FEEDER)
        assert (later.outcome, later.note) == (Outcome.UPDATED, "")
        task = Task.objects.get(task_id="tsk_skew")
        assert (task.raw_state, task.updated_at) == ("running", NOW)
        # Now real again: a plainly older snapshot is stale.
        old = ingest_openapi_task(
            task_data("tsk_skew", "queued", NOW - dt.timedelta(minutes=1)), actor=FEEDER
        )
        assert old.outcome == Outcome.STALE

    def test_a_plainly_older_snapshot_is_still_stale(self):
        ingest_openapi_task(task_data("tsk_real", "running", NOW), actor=FEEDER)
        old = ingest_openapi_task(
            task_data("tsk_real", "queued", NOW - dt.timedelta(hours=1)), actor=FEEDER
        )
        assert (old.outcome, old.note) == (Outcome.STALE, "older than the stored snapshot")

    def test_a_terminal_state_still_never_goes_back(self):
        ingest_openapi_task(task_data("tsk_done", "completed", FUTURE), actor=FEEDER)
        back = ingest_openapi_task(task_data("tsk_done", "running", NOW), actor=FEEDER)
        assert back.outcome == Outcome.STALE

    def test_operations_of_the_same_sequence(self):
        def op(status: str, stamp: dt.datetime) -> dict:
            return operation_snapshot(status, id="op_skew", updatedAt=iso(stamp))

        first = ingest_runtime_operation(op("queued", FUTURE), actor=FEEDER)
        assert "clock skew" in first.note
        later = ingest_runtime_operation(op("running", NOW), actor=FEEDER)
        assert later.outcome == Outcome.UPDATED
        assert RuntimeOperation.objects.get(operation_id="op_skew").raw_status == "running"
        old = ingest_runtime_operation(op("queued", NOW - dt.timedelta(hours=1)), actor=FEEDER)
        assert old.outcome == Outcome.STALE

    def test_message_envelopes(self):
        def envelope(state: str, stamp: dt.datetime) -> dict:
            return {
                "id": "msg_skew",
                "conversation_id": "conv_skew",
                "type": "agent_reply",
                "sender": "agt",
                "body": "…",
                "state": state,
                "created_at": iso(NOW - dt.timedelta(hours=1)),
                "updated_at": iso(stamp),
            }

        first = ingest_message(envelope("streaming", FUTURE), actor=FEEDER)
        assert "clock skew" in first.note
        later = ingest_message(envelope("completed", NOW), actor=FEEDER)
        assert later.outcome == Outcome.UPDATED
        assert Message.objects.get(message_id="msg_skew").state == "completed"


@pytest.mark.django_db
class TestTheBatchPath:
    """An ingest call with several records is written set-based (``*/services/batch.py``)."""

    def test_future_then_real_in_one_call_and_across_calls(self, feeder_api):
        answers = ingest(
            feeder_api,
            ("openapi_task", task_data("tsk_b1", "queued", FUTURE)),
            ("openapi_task", task_data("tsk_b1", "running", NOW)),
            ("openapi_task", task_data("tsk_b2", "queued", FUTURE)),
            ("runtime_operation", operation_snapshot("queued", id="op_b", updatedAt=iso(FUTURE))),
        )
        assert [a["result"] for a in answers] == ["created", "updated", "created", "created"]
        assert "clock skew" in answers[0]["note"] and "note" not in answers[1]
        assert "clock skew" in answers[3]["note"]
        assert Task.objects.get(task_id="tsk_b1").raw_state == "running"
        answers = ingest(
            feeder_api,
            ("openapi_task", task_data("tsk_b2", "running", NOW)),
            ("openapi_task", task_data("tsk_b1", "queued", NOW - dt.timedelta(hours=1))),
            ("runtime_operation", operation_snapshot("running", id="op_b", updatedAt=iso(NOW))),
        )
        assert [a["result"] for a in answers] == ["updated", "stale", "updated"]
        assert Task.objects.get(task_id="tsk_b2").raw_state == "running"
        assert RuntimeOperation.objects.get(operation_id="op_b").raw_status == "running"


@pytest.mark.django_db
class TestTheProjectionAudit:
    def test_future_stamped_rows_are_listed_as_a_note_that_does_not_fail(self):
        make_task("running")  # a real stamp: not listed
        ingest_openapi_task(task_data("tsk_future", "running", FUTURE), actor=FEEDER)
        ingest_runtime_operation(
            operation_snapshot("running", id="op_future", updatedAt=iso(FUTURE)), actor=FEEDER
        )
        ingest_message(
            {
                "id": "msg_future",
                "conversation_id": "c",
                "type": "agent_reply",
                "sender": "agt",
                "body": "x",
                "state": "completed",
                "created_at": iso(NOW),
                "updated_at": iso(FUTURE),
            },
            actor=FEEDER,
        )
        report = projection_audit.sweep()
        found = report.categories["future_stamp"]
        assert found.count == 3
        assert {(e["kind"], e["id"]) for e in found.examples} == {
            ("task", "tsk_future"),
            ("operation", "op_future"),
            ("message", "msg_future"),
        }
        task = next(e for e in found.examples if e["kind"] == "task")
        assert task["protocol"] == "openapi" and "ahead of the console's clock" in task["note"]
        assert not report.failing
        assert "future_stamp" in projection_audit.INFORMATIONAL

    def test_the_audit_report_lists_and_links_them(self):
        ingest_openapi_task(task_data("tsk/future", "running", FUTURE), actor=FEEDER)
        report = json.loads(json.dumps(projection_audit.sweep().to_json(), default=str))
        markup = render_to_string("audit/_report.html", {"summary": _summary_rows(report)})
        assert "Stamped in the future (clock skew)" in markup
        assert 'href="/tasks/tsk%2Ffuture/?protocol=openapi"' in markup
