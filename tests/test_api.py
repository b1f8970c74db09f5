"""The REST API: tokens, read endpoints, the ingest API, on PostgreSQL."""

from __future__ import annotations

import copy
import json
import random
from io import StringIO

import pytest
from django.contrib.auth.models import Group
from django.core.management import call_command
from rest_framework.test import APIClient

from beeos_console.auditlog.models import AuditEntry
from beeos_console.core import tokens
from beeos_console.core.models import ApiToken
from operations.models import RuntimeOperation
from tasks.models import Message, Task

from .factories import make_a2a_task, make_operation, make_task, openapi_task, operation_snapshot

pytestmark = pytest.mark.django_db


def client_for(user) -> APIClient:
    _, key = tokens.issue(user, "test")
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    return api


@pytest.fixture
def feeder_user(django_user_model):
    user = django_user_model.objects.create_user("sync-feeder")
    user.groups.add(Group.objects.get_or_create(name="feeder")[0])
    return user


@pytest.fixture
def feeder_api(feeder_user) -> APIClient:
    return client_for(feeder_user)


@pytest.fixture
def support_api(support_user) -> APIClient:
    return client_for(support_user)


def ingest(api: APIClient, records: list, **extra):
    return api.post(
        "/api/v1/ingest/",
        data=json.dumps({"records": records}),
        content_type="application/json",
        **extra,
    )


class TestTokens:
    def test_command_prints_the_key_once_and_stores_only_its_hash(self, support_user):
        out, err = StringIO(), StringIO()
        call_command("create_api_token", support_user.username, stdout=out, stderr=err)
        key = out.getvalue().strip()
        assert key.startswith("bco_")
        token = ApiToken.objects.get()
        assert token.key_hash == tokens.hash_key(key) and key not in token.key_hash
        assert "not shown again" in err.getvalue()
        api = APIClient()
        api.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
        assert api.get("/api/v1/tasks/").status_code == 200

    def test_wrong_and_revoked_tokens_are_refused(self, support_user):
        token, key = tokens.issue(support_user)
        api = APIClient()
        api.credentials(HTTP_AUTHORIZATION="Bearer bco_wrong")
        assert api.get("/api/v1/tasks/").status_code == 401
        tokens.revoke(token)
        api.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
        assert api.get("/api/v1/tasks/").status_code == 401

    def test_anonymous_is_refused(self):
        assert APIClient().get("/api/v1/tasks/").status_code in (401, 403)


class TestReadApi:
    def test_task_list_carries_raw_values_and_projection(self, support_api):
        make_task("timeout")
        data = support_api.get("/api/v1/tasks/").json()
        row = data["results"][0]
        assert (row["raw_state"], row["status"], row["reason"]) == ("timeout", "failed", "timeout")
        assert (row["outcome_certainty"], row["retry_policy"]) == ("uncertain", "manual_review")
        assert row["projection_rule"] == "openapi:timeout"
        assert data["next"] is None

    def test_same_filtersets_as_the_html_pages(self, support_api):
        failed = make_task("failed")
        make_task("running")
        rows = support_api.get("/api/v1/tasks/?status=failed").json()["results"]
        assert [r["task_id"] for r in rows] == [failed.task_id]
        bad = support_api.get("/api/v1/tasks/?status=exploded")
        assert bad.status_code == 400 and "status" in bad.json()

    def test_cursor_pages(self, support_api):
        made = [make_task(minutes_ago=i).task_id for i in range(7)]
        first = support_api.get("/api/v1/tasks/?page_size=3").json()
        second = support_api.get(first["next"]).json()
        third = support_api.get(second["next"]).json()
        got = [r["task_id"] for page in (first, second, third) for r in page["results"]]
        assert got == made
        back = support_api.get(second["previous"]).json()
        assert [r["task_id"] for r in back["results"]] == made[:3]

    def test_each_protocol_emits_its_own_cancel_spelling(self, support_api):
        make_task("cancelled")  # a producer wrote the British spelling on OpenAPI
        make_a2a_task("TASK_STATE_CANCELED")
        make_a2a_task("canceled")
        rows = support_api.get("/api/v1/tasks/?status=cancelled").json()["results"]
        wire = sorted((r["protocol"], r["raw_state"], r["wire_state"]) for r in rows)
        assert wire == [
            ("a2a", "TASK_STATE_CANCELED", "TASK_STATE_CANCELED"),
            ("a2a", "canceled", "canceled"),
            ("openapi", "cancelled", "canceled"),
        ]
        assert {r["status"] for r in rows} == {"cancelled"}

    def test_task_detail_and_ambiguous_ids(self, support_api):
        make_task("running", task_id="dup-1")
        make_a2a_task(id="dup-1")
        assert support_api.get("/api/v1/tasks/dup-1/").status_code == 400
        detail = support_api.get("/api/v1/tasks/dup-1/?protocol=openapi").json()
        assert detail["raw_payload"]["task_id"] == "dup-1"
        assert support_api.get("/api/v1/tasks/nope/").status_code == 404

    def test_operations_and_events(self, support_api):
        op = make_operation("outcome_unknown")
        rows = support_api.get("/api/v1/operations/?raw_status=outcome_unknown").json()["results"]
        assert [r["operation_id"] for r in rows] == [op.operation_id]
        detail = support_api.get(f"/api/v1/operations/{op.operation_id}/").json()
        assert (detail["status"], detail["outcome_certainty"]) == ("failed", "uncertain")
        assert detail["effect_state"] == "committed"
        events = support_api.get(f"/api/v1/operation-events/?operation={op.operation_id}")
        assert events.status_code == 200

    def test_audit_entries_need_admin_and_are_immutable(self, support_api, admin_user):
        make_task("running")
        assert support_api.get("/api/v1/audit-entries/").status_code == 403
        admin_api = client_for(admin_user)
        assert admin_api.get("/api/v1/audit-entries/").status_code == 200
        AuditEntry.objects.create(actor="x", action="y", object_kind="task", object_id="t")
        entry = AuditEntry.objects.get()
        for method in ("put", "patch", "delete"):
            response = getattr(admin_api, method)(f"/api/v1/audit-entries/{entry.pk}/")
            assert response.status_code == 405
        assert admin_api.post("/api/v1/audit-entries/", {}).status_code == 405
        assert AuditEntry.objects.get().action == "y"

    def test_a_feeder_cannot_read(self, feeder_api):
        assert feeder_api.get("/api/v1/tasks/").status_code == 403

    def test_schema_and_docs(self, support_user, client):
        client.force_login(support_user)
        schema = client.get("/api/schema/")
        assert schema.status_code == 200 and b"/api/v1/ingest/" in schema.content
        docs = client.get("/api/docs/")
        assert docs.status_code == 200 and b"swagger" in docs.content.lower()


class TestIngestApi:
    def test_one_result_per_record_in_order(self, feeder_api):
        task = openapi_task("running")
        records = [
            {"kind": "openapi_task", "data": task},
            {"kind": "openapi_task", "data": task},
            {"kind": "runtime_operation", "data": operation_snapshot("queued")},
            {"kind": "openapi_task", "data": {**task, "task_id": "x" * 257}},
            {"kind": "mystery", "data": {}},
            "not an object",
            {"kind": "message", "data": {"id": "m1"}},
        ]
        response = ingest(feeder_api, records)
        assert response.status_code == 200
        results = response.json()["results"]
        assert [r["result"] for r in results] == [
            "created",
            "unchanged",
            "created",
            "rejected",
            "rejected",
            "rejected",
            "rejected",
        ]
        assert [r["index"] for r in results] == list(range(7))
        assert "at most 256" in results[3]["errors"]["task_id"][0]
        assert "unknown kind" in results[4]["errors"]["kind"][0]
        assert set(results[6]["errors"]) >= {"conversation_id", "state", "created_at"}
        assert Task.objects.count() == 1 and RuntimeOperation.objects.count() == 1
        assert Message.objects.count() == 0

    def test_stale_and_updated_and_audited_with_the_feeder_as_actor(self, feeder_api):
        running = openapi_task("running", updated_at="2026-11-30T08:00:00Z")
        done = {**running, "status": "completed", "updated_at": "2026-11-30T08:05:00Z"}
        old = {**running, "updated_at": "2026-11-30T07:00:00Z", "status": "queued"}
        results = ingest(
            feeder_api,
            [
                {"kind": "openapi_task", "data": running},
                {"kind": "openapi_task", "data": done},
                {"kind": "openapi_task", "data": old},
            ],
        ).json()["results"]
        assert [r["result"] for r in results] == ["created", "updated", "stale"]
        entry = AuditEntry.objects.get(action="task.state_changed")
        assert (entry.actor, entry.actor_kind) == ("sync-feeder", "feeder")

    def test_shuffled_duplicated_stream_converges(self, feeder_api):
        snapshots = []
        for i in range(12):
            base = openapi_task(
                "queued", task_id=f"tsk_conv_{i}", updated_at="2026-11-30T08:00:00Z"
            )
            snapshots += [
                base,
                {**base, "status": "running", "updated_at": "2026-11-30T08:01:00Z"},
                {**base, "status": "input_required", "updated_at": "2026-11-30T08:02:00Z"},
                {
                    **base,
                    "status": ["completed", "failed", "canceled"][i % 3],
                    "updated_at": "2026-11-30T08:03:00Z",
                },
            ]
        ops = []
        for i in range(6):
            snap = operation_snapshot("queued", id=f"op_conv_{i}", sequence="1")
            ops += [
                snap,
                {**snap, "status": "running", "effectState": "running", "sequence": "2"},
                {
                    **snap,
                    "status": "runtime_committed",
                    "effectState": "committed",
                    "sequence": "3",
                },
                {
                    **snap,
                    "status": "succeeded",
                    "effectState": "committed",
                    "terminal": True,
                    "sequence": "4",
                },
            ]
        records = [{"kind": "openapi_task", "data": s} for s in snapshots * 2]
        records += [{"kind": "runtime_operation", "data": s} for s in ops * 2]
        random.Random(11).shuffle(records)
        for start in range(0, len(records), 25):
            batch = copy.deepcopy(records[start : start + 25])
            assert ingest(feeder_api, batch).status_code == 200
        for i in range(12):
            task = Task.objects.get(task_id=f"tsk_conv_{i}")
            assert task.raw_state == ["completed", "failed", "canceled"][i % 3]
        assert set(RuntimeOperation.objects.values_list("raw_status", flat=True)) == {"succeeded"}

    @pytest.mark.parametrize(
        ("body", "status", "text"),
        [
            (b"{not json", 400, "Malformed JSON"),
            (b'{"records": {"kind": "x"}}', 400, "records"),
            (b"[]", 400, "records"),
        ],
    )
    def test_malformed_bodies(self, feeder_api, body, status, text):
        response = feeder_api.post("/api/v1/ingest/", data=body, content_type="application/json")
        assert response.status_code == status
        assert text in response.json()["detail"]
        assert Task.objects.count() == 0

    def test_too_many_records(self, feeder_api):
        records = [{"kind": "openapi_task", "data": openapi_task()} for _ in range(1001)]
        response = ingest(feeder_api, records)
        assert response.status_code == 413
        assert "at most 1000" in response.json()["detail"]
        assert Task.objects.count() == 0

    def test_too_many_bytes(self, feeder_api, settings):
        settings.INGEST_MAX_BYTES = 2_000
        records = [{"kind": "openapi_task", "data": openapi_task(error="x" * 3_000)}]
        response = ingest(feeder_api, records)
        assert response.status_code == 413
        assert Task.objects.count() == 0

    def test_only_feeders_may_ingest(self, support_api, admin_user):
        records = [{"kind": "openapi_task", "data": openapi_task()}]
        assert ingest(support_api, records).status_code == 403
        assert ingest(client_for(admin_user), records).status_code == 403
        assert Task.objects.count() == 0

    def test_session_posts_need_csrf(self, client, django_user_model):
        user = django_user_model.objects.create_user("web-feeder", password="pw")
        user.groups.add(Group.objects.get_or_create(name="feeder")[0])
        csrf_client = type(client)(enforce_csrf_checks=True)
        csrf_client.force_login(user)
        response = csrf_client.post(
            "/api/v1/ingest/", data=json.dumps({"records": []}), content_type="application/json"
        )
        assert response.status_code == 403
        assert "CSRF" in response.json()["detail"]


class TestHostileInput:
    """Found by fuzzing: each used to be a 500."""

    def test_nul_characters_are_rejected_not_crashed(self, feeder_api, support_api):
        records = [
            {"kind": "openapi_task", "data": openapi_task(task_id="tsk_\x00nul")},
            {"kind": "openapi_task", "data": openapi_task(metadata={"k": "v\x00"})},
            {"kind": "openapi_task", "data": openapi_task()},
        ]
        results = ingest(feeder_api, records).json()["results"]
        assert [r["result"] for r in results] == ["rejected", "rejected", "created"]
        assert "NUL" in json.dumps(results[0]["errors"])
        assert support_api.get("/api/v1/tasks/?raw_state=a%00b").status_code == 400

    def test_unpaired_surrogates_are_rejected_not_crashed(self, feeder_api):
        """JSON may escape half a UTF-16 pair; PostgreSQL stores it neither as text nor jsonb."""
        good = json.dumps(openapi_task(task_id="tsk_fine"))
        body = (
            '{"records": ['
            '{"kind": "openapi_task", "data": {"task_id": "tsk_a", "agent_id": "agt_\\ud800",'
            ' "status": "running"}},'
            '{"kind": "message", "data": {"id": "m1", "conversation_id": "c", "type": "x",'
            ' "state": "completed", "created_at": "2026-11-30T08:00:00Z",'
            ' "content": {"text": "\\udfff"}}},'
            '{"kind": "openapi_task", "data": {"task_id": "tsk_pair",'
            ' "agent_id": "agt_\\ud83d\\ude00", "status": "running"}},'
            f'{{"kind": "openapi_task", "data": {good}}}'
            "]}"
        )
        response = feeder_api.post("/api/v1/ingest/", data=body, content_type="application/json")
        assert response.status_code == 200
        results = response.json()["results"]
        assert [r["result"] for r in results] == ["rejected", "rejected", "created", "created"]
        assert "surrogate" in results[0]["errors"]["agent_id"][0]
        assert "surrogate" in results[1]["errors"]["content.text"][0]
        # A proper pair is one character, stored as such.
        assert Task.objects.get(task_id="tsk_pair").agent_id == "agt_\U0001f600"

    def test_ids_with_control_characters_are_rejected(self, feeder_api, support_api):
        """An id lands in URLs: a line break in one used to break the list page."""
        records = [
            {"kind": "openapi_task", "data": openapi_task(task_id="tsk_a\nb")},
            {"kind": "runtime_operation", "data": operation_snapshot("running", id="op\tx")},
            {"kind": "openapi_task", "data": openapi_task(agent_id="agt\nfine in a name")},
        ]
        results = ingest(feeder_api, records).json()["results"]
        assert [r["result"] for r in results] == ["rejected", "rejected", "created"]
        assert "control character" in results[0]["errors"]["task_id"][0]
        assert "control character" in results[1]["errors"]["id"][0]

    def test_odd_time_zone_offsets_are_normalised(self, feeder_api, support_api):
        odd = openapi_task(created_at="2026-11-30T07:55:06-20:47")
        results = ingest(feeder_api, [{"kind": "openapi_task", "data": odd}]).json()["results"]
        assert results[0]["result"] == "created"
        response = support_api.get("/api/v1/tasks/?created_after=0054-05-31T07:55:06-20:47")
        assert response.status_code in (200, 400)

    def test_absurd_stuck_minutes_is_a_400(self, support_api):
        assert support_api.get("/api/v1/tasks/?stuck=99999999999999").status_code == 400
