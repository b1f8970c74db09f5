"""The webhook inbox: applied in batches, in order per object, failures kept, retries audited.

Events reach the inbox through the real receiver (signed HTTP requests through
the test client) or through ``inbox.store`` (the receiver's one INSERT) when a
test needs many; they are applied by ``manage.py apply_webhooks``, the
django-tasks job on ``db_worker``, or ``inbox.apply_batch``.
"""

from __future__ import annotations

import datetime as dt
import json
import random
import threading

import pytest
from django.core.management import call_command
from django.db import connection, connections
from django.test.utils import CaptureQueriesContext
from django_tasks_db.models import DBTaskResult
from prometheus_client.parser import text_string_to_metric_families

from beeos_console.auditlog.models import AuditEntry
from beeos_console.mirror import counters
from beeos_console.upstream import inbox
from beeos_console.upstream.models import WebhookInboxEvent
from beeos_console.upstream.selectors import webhook_backlog
from tasks import states
from tasks.models import Task
from tasks.services.rules import apply_task, decide_task
from tasks.services.snapshots import parse_openapi_task
from tasks.services.write import ingest_openapi_task

from .factories import BASE, FEEDER, iso, make_task
from .test_webhooks import push, task_push_headers

SECRET = "whsec_" + "k" * 40
TERMINAL = {"completed", "failed", "canceled", "timeout", "rejected"}


@pytest.fixture(autouse=True)
def webhook_secret(settings):
    settings.BEEOS_WEBHOOK_SECRET = SECRET
    settings.WEBHOOK_NUDGE_SECONDS = 0  # tests apply explicitly, unless they test the job


def task_event(task_id: str, status: str, minute: float, **extra) -> dict:
    payload = {
        "type": "task_status",
        "task_id": task_id,
        "context_id": task_id,
        "status": status,
        "final": status in TERMINAL,
        "timestamp": iso(BASE + dt.timedelta(minutes=minute)),
    }
    payload.update(extra)
    return payload


def send(client, payload: dict):
    body = json.dumps(payload).encode()
    response = push(client, body, **task_push_headers(body))
    assert response.status_code == 200, response.content
    return response.json()


def queue(payload: dict) -> int | None:
    """The receiver's INSERT without the HTTP request (for tests that need many events)."""
    envelope = inbox.task_status_envelope(payload)
    return inbox.store(envelope, "task_push", json.dumps(payload))


def audit_of(task_id: str) -> list[AuditEntry]:
    return list(AuditEntry.objects.filter(object_id=task_id).order_by("seq"))


def transitions(task_id: str) -> list[tuple[str, str]]:
    return [(e.before["raw_state"], e.after["raw_state"]) for e in audit_of(task_id)]


pytestmark = pytest.mark.django_db


class TestApplyInOrder:
    def test_a_lifecycle_in_one_batch_applies_event_by_event(self, client):
        for status, minute in [("queued", 0), ("running", 1), ("input_required", 2)]:
            send(client, task_event("tsk_life", status, minute))
        send(client, task_event("tsk_life", "completed", 3))
        assert not Task.objects.exists()  # acknowledged, not applied

        report = inbox.apply_batch()

        assert (report.applied, report.failed) == (4, 0)
        assert report.outcomes == {"created": 1, "updated": 3}
        task = Task.objects.get(task_id="tsk_life")
        assert (task.raw_state, task.status) == ("completed", "completed")
        assert task.completed_at == BASE + dt.timedelta(minutes=3)
        # One audit entry per state change, in the order received, each naming its event.
        assert transitions("tsk_life") == [
            ("queued", "running"),
            ("running", "input_required"),
            ("input_required", "completed"),
        ]
        events = list(WebhookInboxEvent.objects.order_by("id"))
        assert [e.detail["webhook_event"] for e in audit_of("tsk_life")] == [
            e.pk for e in events[1:]
        ]
        assert {(e.status, e.attempts) for e in events} == {("applied", 1)}
        assert counters.totals(counters.TASK).get("completed") == 1

    def test_an_older_event_received_later_is_stale(self, client):
        make_task("running", task_id="tsk_late", updated_at=iso(BASE))
        send(client, task_event("tsk_late", "completed", 5))
        send(client, task_event("tsk_late", "running", 3))
        call_command("apply_webhooks", verbosity=0)
        assert Task.objects.get(task_id="tsk_late").raw_state == "completed"
        assert list(WebhookInboxEvent.objects.order_by("id").values_list("result", flat=True)) == [
            "updated",
            "stale",
        ]
        assert transitions("tsk_late") == [("running", "completed")]

    def test_events_keep_what_the_stored_task_knows(self, client):
        make_task("running", task_id="tsk_known", agent_id="agt_known", caller_id="usr_1")
        send(client, task_event("tsk_known", "completed", 10))
        inbox.apply_batch()
        task = Task.objects.get(task_id="tsk_known")
        known = (task.agent_id, task.caller_id, task.raw_state)
        assert known == ("agt_known", "usr_1", "completed")

    def test_batches_split_an_objects_events_and_still_apply_them_in_order(self):
        for i in range(6):
            queue(task_event(f"tsk_split_{i}", "queued", 0))
        for i in range(6):
            queue(task_event(f"tsk_split_{i}", "running", 1))
            queue(task_event(f"tsk_split_{i}", "failed", 2))
        report = inbox.drain(limit=5)
        assert (report.applied, report.failed) == (18, 0)
        for i in range(6):
            assert transitions(f"tsk_split_{i}") == [("queued", "running"), ("running", "failed")]

    @pytest.mark.django_db(transaction=True)
    def test_an_object_whose_earlier_event_another_worker_holds_waits_for_it(self):
        """Two workers: while one holds an object's first event, the other applies
        everything else but that object's later events."""
        first = queue(task_event("tsk_held", "running", 1))
        queue(task_event("tsk_other", "running", 1))
        queue(task_event("tsk_held", "completed", 2))
        held, release = threading.Event(), threading.Event()

        def other_worker() -> None:
            try:
                with connections["default"].cursor() as cursor:
                    cursor.execute("BEGIN")
                    cursor.execute(
                        "SELECT id FROM console_webhookinboxevent WHERE id = %s FOR UPDATE",
                        [first],
                    )
                    held.set()
                    release.wait(10)
                    cursor.execute("ROLLBACK")
            finally:
                connections["default"].close()

        thread = threading.Thread(target=other_worker)
        thread.start()
        try:
            assert held.wait(10)
            report = inbox.apply_batch()
            assert (report.claimed, report.applied, report.deferred) == (2, 1, 1)
            assert set(Task.objects.values_list("task_id", flat=True)) == {"tsk_other"}
        finally:
            release.set()
            thread.join(10)
        inbox.drain()
        assert Task.objects.get(task_id="tsk_held").raw_state == "completed"
        assert transitions("tsk_held") == [("running", "completed")]


class TestStorageRulesThroughTheInbox:
    """The seeded shuffled-and-duplicated streams of test_mirror_writes.py and
    test_api.py, sent as signed webhooks and applied by the worker in batches."""

    def test_shuffled_duplicated_stream_converges_to_newest(self, client):
        lifecycle = [
            ("queued", 0),
            ("running", 0.0333),
            ("input_required", 0.5),
            ("running", 1),
            ("completed", 2),
        ]
        rng = random.Random(7)
        for _ in range(5):
            Task.objects.all().delete()
            WebhookInboxEvent.objects.all().delete()
            stream = [
                task_event("tsk_9QnR2m7TbWcY4pLs8DkE1a", status, minute)
                for status, minute in lifecycle * 3
            ]
            rng.shuffle(stream)
            answers = [send(client, payload)["result"] for payload in stream]
            assert answers.count("queued") == 5 and answers.count("duplicate") == 10
            call_command("apply_webhooks", "--batch", "2", verbosity=0)
            task = Task.objects.get()
            assert (task.raw_state, task.status) == ("completed", "completed")
            assert not WebhookInboxEvent.objects.exclude(status="applied").exists()

    def test_shuffled_duplicated_stream_of_many_tasks_converges(self, client):
        records = []
        for i in range(12):
            end = ["completed", "failed", "canceled"][i % 3]
            records += [
                task_event(f"tsk_conv_{i}", status, minute)
                for status, minute in [("queued", 0), ("running", 1), ("input_required", 2)]
            ]
            records.append(task_event(f"tsk_conv_{i}", end, 3))
            a2a = {
                "id": f"a2a_conv_{i}",
                "contextId": f"ctx_conv_{i}",
                "target_agent_id": "agt_1",
            }
            for state, minute in [("submitted", 0), ("working", 1), ("completed", 2)]:
                stamp = iso(BASE + dt.timedelta(minutes=minute))
                records.append({**a2a, "status": {"state": state, "timestamp": stamp}})
        records *= 2
        random.Random(11).shuffle(records)
        for payload in records:
            send(client, payload)
        call_command("apply_webhooks", "--batch", "25", verbosity=0)
        for i in range(12):
            task = Task.objects.get(protocol="openapi", task_id=f"tsk_conv_{i}")
            assert task.raw_state == ["completed", "failed", "canceled"][i % 3]
            assert Task.objects.get(protocol="a2a", task_id=f"a2a_conv_{i}").raw_state == (
                "completed"
            )
        # No audit entry ever took a task from a terminal state back to an open one.
        for entry in AuditEntry.objects.filter(action="task.state_changed"):
            assert not (
                entry.before["status"] in ("completed", "failed", "cancelled")
                and entry.after["status"] in ("queued", "processing")
            ), (entry.object_id, entry.before, entry.after)
        assert WebhookInboxEvent.objects.filter(status="applied").count() == len(records) // 2


class TestSnapshotsFromStoredColumns:
    """A ``task_status`` event's snapshot is built on the stored task's columns, not on
    its raw payload parsed again (what the worker did before): applied to the task,
    both make the same row, the same audit entry and the same storage decision."""

    STORED = [
        {"agent_id": "agt_1", "caller_id": "usr_1", "status": "running", "created_at": iso(BASE)},
        {
            "agent_id": "agt_2",
            "status": "running",
            "context_id": "ctx_stored",
            "channel_id": "chn_9",
            "created_at": iso(BASE),
            "started_at": iso(BASE + dt.timedelta(minutes=1)),
            "deadline_at": iso(BASE + dt.timedelta(hours=1)),
            "metadata": {"k": [1, {"n": None}], "é": "ü"},
            "result": {"text": "partial"},
        },
        {
            "agent_id": "agt_3",
            "status": "failed",
            "error": {"code": "E_TIMEOUT", "message": "slow"},
            "created_at": iso(BASE),
            "completed_at": iso(BASE + dt.timedelta(minutes=2)),
        },
        {"agent_id": "agt_4", "status": "input_required", "error": "plain", "error_code": 4012},
        {"agent_id": "agt_5", "status": "queued"},  # no times: the columns' fallbacks
        {"agent_id": "agt_6", "status": "mystery_state", "updated_at": iso(BASE)},
    ]
    EVENTS = [
        ("running", 10, {}),
        ("completed", 20, {"context_id": "ctx_event"}),
        ("input_required", 30, {"context_id": ""}),
        ("canceled", -60, {}),
        ("queued", 0, {"context_id": None}),
    ]

    @staticmethod
    def reparsed(task: Task, event: dict):
        """The snapshot as the worker built it before: the raw payload parsed again."""
        base = dict(task.raw_payload)
        base.setdefault("agent_id", task.agent_id)
        stamp = dt.datetime.fromisoformat(event["timestamp"]).isoformat()
        base.update({"status": event["status"], "updated_at": stamp})
        if event.get("context_id"):
            base["context_id"] = event["context_id"]
        if states.is_terminal(states.OPENAPI, event["status"]) and not base.get("completed_at"):
            base["completed_at"] = stamp
        return parse_openapi_task(base, agent_optional=True)

    @staticmethod
    def applied(task: Task, snapshot) -> tuple:
        row = Task.objects.get(pk=task.pk)
        decision = decide_task(snapshot, row)
        change = apply_task(row, snapshot)
        columns = {f.attname: getattr(row, f.attname) for f in Task._meta.concrete_fields}
        return decision, change, columns

    def test_the_same_row_as_parsing_the_stored_payload_again(self):
        checked = 0
        for n, stored in enumerate(self.STORED):
            created = ingest_openapi_task({**stored, "task_id": f"tsk_cols_{n}"}, actor=FEEDER)
            task = Task.objects.get(pk=created.obj.pk)
            for i, (event_status, minute, event_extra) in enumerate(self.EVENTS):
                event = task_event(task.task_id, event_status, minute)
                for key, value in event_extra.items():
                    if value is None:
                        event.pop(key)
                    else:
                        event[key] = value
                claimed = inbox.Claimed(i, "task_status", "openapi", task.task_id, event)
                (item,), failed = inbox.snapshots([claimed], {(task.protocol, task.task_id): task})
                assert not failed
                built, expected = item[1], self.reparsed(task, event)
                assert built.payload == expected.payload
                assert built.payload_digest == expected.payload_digest
                assert (built.raw_state, built.updated_at, built.projection) == (
                    expected.raw_state,
                    expected.updated_at,
                    expected.projection,
                )
                assert self.applied(task, built) == self.applied(task, expected), (n, i)
                checked += 1
        assert checked == len(self.STORED) * len(self.EVENTS)


def make_unreadable_task(task_id: str) -> Task:
    """A mirrored task whose stored payload is no JSON object (a row an older version or
    a hand edit left): an event for it can't be built into a snapshot until the sync
    re-reads it."""
    task = make_task("running", task_id=task_id)
    Task.objects.filter(pk=task.pk).update(raw_payload=["not", "an", "object"])
    return task


class TestFailedEvents:
    def test_an_event_that_cant_be_applied_is_kept_with_its_error(self, client):
        make_unreadable_task("tsk_broken")
        send(client, task_event("tsk_broken", "completed", 9))
        send(client, task_event("tsk_fine", "running", 1))

        report = inbox.apply_batch()

        assert (report.applied, report.failed) == (1, 1)
        broken = WebhookInboxEvent.objects.get(task_id="tsk_broken")
        assert (broken.status, broken.attempts, broken.applied_at) == ("failed", 1, None)
        assert "raw_payload" in broken.error and "must be a JSON object" in broken.error
        assert broken.payload["status"] == "completed"  # the raw event is kept
        assert Task.objects.get(task_id="tsk_broken").raw_state == "running"
        assert Task.objects.get(task_id="tsk_fine").raw_state == "running"
        # Not retried on its own: it stays failed, and the next batches go on.
        send(client, task_event("tsk_fine", "completed", 2))
        inbox.drain()
        assert WebhookInboxEvent.objects.get(pk=broken.pk).status == "failed"
        assert webhook_backlog().failed == 1

    def test_admins_see_failed_events_support_and_operators_do_not(
        self, client, admin_user, operator_user, support_user
    ):
        make_unreadable_task("tsk_broken")
        send(client, task_event("tsk_broken", "completed", 9))
        inbox.apply_batch()
        broken = WebhookInboxEvent.objects.get()

        client.force_login(admin_user)
        page = client.get("/webhooks/?status=failed")
        assert page.status_code == 200
        html = page.content.decode()
        assert "tsk_broken" in html and f"/webhooks/{broken.pk}/" in html
        assert "must be a JSON object" in html
        detail = client.get(f"/webhooks/{broken.pk}/")
        assert detail.status_code == 200
        text = detail.content.decode()
        assert "Not applied." in text and "Retry" in text
        assert "&quot;status&quot;: &quot;completed&quot;" in text  # the raw event, pretty
        assert client.get("/webhooks/?status=applied").content.decode().count("tsk_broken") == 0

        for user in (support_user, operator_user):
            client.force_login(user)
            assert client.get("/webhooks/").status_code == 403
            assert client.get(f"/webhooks/{broken.pk}/").status_code == 403
            assert client.post(f"/webhooks/{broken.pk}/retry/").status_code == 403
        assert WebhookInboxEvent.objects.get().status == "failed"

    def test_retry_queues_it_again_audited_and_the_worker_applies_it(self, client, admin_user):
        task = make_unreadable_task("tsk_broken")
        send(client, task_event("tsk_broken", "completed", 9))
        inbox.apply_batch()
        broken = WebhookInboxEvent.objects.get()
        error = broken.error
        # What fixes it: the sync re-reads the task and stores a readable payload.
        Task.objects.filter(pk=task.pk).update(raw_payload={**task.raw_payload})

        client.force_login(admin_user)
        response = client.post(f"/webhooks/{broken.pk}/retry/", follow=True)
        assert response.status_code == 200
        assert "queued again" in response.content.decode()
        broken.refresh_from_db()
        assert (broken.status, broken.error) == ("queued", "")
        (entry,) = AuditEntry.objects.filter(action="webhook.retry")
        assert (entry.actor, entry.object_kind, entry.object_id) == (
            "ada-admin",
            "webhook",
            str(broken.pk),
        )
        assert entry.before == {"status": "failed", "error": error, "attempts": 1}
        assert entry.after == {"status": "queued"}

        inbox.drain()
        broken.refresh_from_db()
        assert (broken.status, broken.result, broken.attempts) == ("applied", "updated", 2)
        assert Task.objects.get(pk=task.pk).raw_state == "completed"
        # An applied event is not retried: nothing changes, nothing is audited.
        again = client.post(f"/webhooks/{broken.pk}/retry/", follow=True)
        assert "not failed" in again.content.decode()
        assert AuditEntry.objects.filter(action="webhook.retry").count() == 1

    def test_retry_needs_a_post_with_csrf(self, client, admin_user):
        make_unreadable_task("tsk_broken")
        send(client, task_event("tsk_broken", "completed", 9))
        inbox.apply_batch()
        broken = WebhookInboxEvent.objects.get()
        csrf_client = client.__class__(enforce_csrf_checks=True)
        csrf_client.force_login(admin_user)
        assert csrf_client.post(f"/webhooks/{broken.pk}/retry/").status_code == 403
        assert client.get(f"/webhooks/{broken.pk}/retry/").status_code in (302, 405)
        assert WebhookInboxEvent.objects.get().status == "failed"


class TestInboxPages:
    def test_the_list_is_keyset_paged_and_filtered_by_received_time(self, client, admin_user):
        for i in range(55):
            queue(task_event(f"tsk_page_{i:02d}", "running", 1))
        client.force_login(admin_user)
        first = client.get("/webhooks/")
        assert len(first.context["rows"]) == 50 and "tsk_page_54" in first.content.decode()
        assert "tsk_page_04" not in first.content.decode()
        second = client.get(first.context["next_url"])
        assert [e.task_id for e in second.context["rows"]] == [
            f"tsk_page_{i:02d}" for i in (4, 3, 2, 1, 0)
        ]
        future = iso(dt.datetime.now(dt.UTC) + dt.timedelta(hours=1))
        later = client.get("/webhooks/", {"received_after": future})
        assert later.status_code == 200 and later.context["rows"] == []
        bad = client.get("/webhooks/", {"received_after": "soon"})
        assert bad.status_code == 400

    def test_the_pages_run_a_fixed_number_of_bounded_queries(self, client, admin_user):
        client.force_login(admin_user)

        def measure(url: str) -> int:
            with CaptureQueriesContext(connection) as ctx:
                assert client.get(url).status_code == 200
            for query in ctx.captured_queries:
                if "COUNT(" in query["sql"].upper():
                    assert "LIMIT" in query["sql"].upper(), query["sql"]
            return len(ctx.captured_queries)

        first = queue(task_event("tsk_q_0", "running", 1))
        small = [measure(u) for u in ("/webhooks/", "/webhooks/?status=failed", "/")]
        for i in range(1, 40):
            queue(task_event(f"tsk_q_{i}", "running", 1))
        large = [measure(u) for u in ("/webhooks/", "/webhooks/?status=failed", "/")]
        assert small == large
        assert measure(f"/webhooks/{first}/") <= 6

    def test_an_unknown_event_is_a_404(self, client, admin_user):
        client.force_login(admin_user)
        assert client.get("/webhooks/999999/").status_code == 404


class TestBacklog:
    def test_backlog_counts_queued_and_failed_and_the_oldest_age(self, client):
        assert webhook_backlog().queued == 0 and webhook_backlog().oldest_age_seconds == 0
        for i in range(3):
            queue(task_event(f"tsk_b_{i}", "running", 1))
        WebhookInboxEvent.objects.filter(task_id="tsk_b_0").update(
            received_at=dt.datetime.now(dt.UTC) - dt.timedelta(minutes=10)
        )
        backlog = webhook_backlog()
        assert (backlog.queued, backlog.failed, backlog.queued_capped) == (3, 0, False)
        assert 590 <= backlog.oldest_age_seconds <= 900
        capped = webhook_backlog(cap=2)
        assert capped.queued == 3 and capped.queued_capped
        inbox.drain()
        assert webhook_backlog().queued == 0

    def test_the_dashboard_shows_the_backlog_to_operators_and_admins(
        self, client, admin_user, operator_user, support_user
    ):
        queue(task_event("tsk_dash", "running", 1))
        client.force_login(admin_user)
        html = client.get("/").content.decode()
        assert 'id="webhook-backlog"' in html and "1</span> event waiting" in html
        assert 'href="/webhooks/"' in html
        client.force_login(operator_user)
        html = client.get("/").content.decode()
        assert 'id="webhook-backlog"' in html and 'href="/webhooks/"' not in html
        client.force_login(support_user)
        assert 'id="webhook-backlog"' not in client.get("/").content.decode()
        inbox.drain()
        client.force_login(admin_user)
        assert "No event waiting" in client.get("/").content.decode()


@pytest.mark.django_db(transaction=True)
def test_the_receiver_keeps_one_apply_job_waiting_and_db_worker_applies_it(client, settings):
    """No job per event: many events, one waiting job; `db_worker` runs it and it drains."""
    settings.WEBHOOK_NUDGE_SECONDS = 1e-9  # every request checks (the clock never throttles)
    settings.WEBHOOK_APPLY_LINGER_SECONDS = 0
    for i in range(5):
        send(client, task_event(f"tsk_job_{i}", "running", 1))
        send(client, task_event(f"tsk_job_{i}", "completed", 2))
    jobs = DBTaskResult.objects.filter(task_path="beeos_console.upstream.tasks.apply_webhook_inbox")
    assert jobs.count() == 1 and jobs.get().status == "READY"
    assert not Task.objects.exists()

    call_command("db_worker", "--batch", "--no-startup-delay", verbosity=0)

    assert jobs.get().status == "SUCCESSFUL"
    assert jobs.get().return_value == {"applied": 10, "failed": 0, "created": 5, "updated": 5}
    assert set(Task.objects.values_list("raw_state", flat=True)) == {"completed"}
    # The next event finds no job waiting and enqueues one.
    send(client, task_event("tsk_job_9", "running", 1))
    assert jobs.filter(status="READY").count() == 1
    connection.close()


def test_a_failing_database_marks_nothing_and_the_events_wait(client):
    """The schema behind the code (a deploy before its migration): every write fails the
    same way. That is not the events' fault: none is marked failed, all stay queued."""
    for i in range(4):
        queue(task_event(f"tsk_down_{i}", "running", 1))
    with connection.cursor() as cursor:
        cursor.execute("ALTER TABLE tasks_task RENAME COLUMN agent_id TO agent_id_gone")
    with pytest.raises(Exception, match="agent_id"):
        inbox.apply_batch()
    assert set(WebhookInboxEvent.objects.values_list("status", "attempts")) == {("queued", 0)}
    with connection.cursor() as cursor:
        cursor.execute("ALTER TABLE tasks_task RENAME COLUMN agent_id_gone TO agent_id")
    assert inbox.drain().applied == 4


def test_metrics_export_the_backlog_its_age_and_events_by_status(client, settings):
    settings.METRICS_TOKEN = "metrics-" + "w" * 40
    settings.METRICS_BIND = ""
    make_unreadable_task("tsk_broken")
    queue(task_event("tsk_broken", "completed", 9))
    queue(task_event("tsk_ok", "running", 1))
    inbox.apply_batch()
    queue(task_event("tsk_ok", "completed", 2))
    WebhookInboxEvent.objects.filter(status="queued").update(
        received_at=dt.datetime.now(dt.UTC) - dt.timedelta(seconds=90)
    )
    response = client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {settings.METRICS_TOKEN}")
    assert response.status_code == 200
    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(response.content.decode())
        for s in family.samples
    }
    assert samples[("beeos_console_webhook_backlog", ())] == 1
    assert 90 <= samples[("beeos_console_webhook_backlog_oldest_age_seconds", ())] < 600
    by_status = {
        dict(labels)["status"]: v
        for (name, labels), v in samples.items()
        if name == "beeos_console_webhook_inbox_events"
    }
    assert by_status == {"queued": 1, "applied": 1, "failed": 1}
    assert samples[("beeos_console_webhook_failed", ())] == 1
    assert samples[("beeos_console_metrics_source_up", (("source", "webhook_inbox"),))] == 1
