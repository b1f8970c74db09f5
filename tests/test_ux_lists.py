"""Issue #14, leftovers: the audit log's time presets, "longest stuck first" in the REST API."""

from __future__ import annotations

import base64
import json
import re

import pytest
from django.db import connection
from django.test import Client
from django.utils import timezone
from rest_framework.test import APIClient

from beeos_console.core import tokens
from beeos_console.core.pagination import encode_cursor

from .factories import iso, make_operation, make_task

pytestmark = pytest.mark.django_db


def login(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def api_for(user) -> APIClient:
    _, key = tokens.issue(user, "test")
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    return api


def audit_entry(action: str, minutes_ago: int) -> None:
    """An audit entry written ``minutes_ago`` (INSERT only: the log is append-only)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO console_auditentry (at, actor, actor_kind, action, object_kind,"
            " object_id, before, after, reason, detail, prev_digest, digest)"
            " VALUES (now() - %s * interval '1 minute', 'ada', 'user', %s, 'task', 't1',"
            " '{}', '{}', '', '{}', '', '')",
            [minutes_ago, action],
        )


def actions(response) -> list[str]:
    return re.findall(r"<code[^>]*>(test\.[a-z0-9]+)</code>", response.content.decode())


class TestAuditLogTimePresets:
    @pytest.fixture
    def entries(self, db):
        audit_entry("test.hour", 20)
        audit_entry("test.day", 60 * 5)
        audit_entry("test.week", 60 * 24 * 3)
        audit_entry("test.month", 60 * 24 * 30)

    def test_the_presets_keep_the_last_hour_day_week(self, admin_user, entries):
        admin = login(admin_user)
        assert actions(admin.get("/audit/log/?at_within=1h")) == ["test.hour"]
        assert actions(admin.get("/audit/log/?at_within=24h")) == ["test.hour", "test.day"]
        assert actions(admin.get("/audit/log/?at_within=7d")) == [
            "test.hour",
            "test.day",
            "test.week",
        ]
        assert len(actions(admin.get("/audit/log/"))) == 4

    def test_the_panel_offers_the_same_presets_as_every_list_labelled_utc(self, admin_user):
        admin = login(admin_user)
        audit = admin.get("/audit/log/?at_within=24h").content.decode()
        tasks = admin.get("/tasks/").content.decode()
        assert "When (UTC)" in audit
        for value, label in (("1h", "last 1 h"), ("24h", "last 24 h"), ("7d", "last 7 d")):
            # The same choices, from the same place, as the task list's.
            assert re.search(rf'name="at_within" value="{value}"', audit)
            assert label in audit and label in tasks
        assert re.search(r'name="at_within" value="24h"[^>]*checked', audit)
        assert "Custom: from (UTC)" in audit and "Custom: before (UTC)" in audit
        assert "<code>24h</code>" in audit  # a removable chip

    def test_custom_range_and_preset_combine(self, admin_user, entries):
        admin = login(admin_user)
        since = (timezone.now() - timezone.timedelta(hours=10)).strftime("%Y-%m-%dT%H:%M")
        response = admin.get(f"/audit/log/?at_within=7d&at_after={since}")
        assert actions(response) == ["test.hour", "test.day"]

    def test_an_unknown_preset_is_a_clear_400(self, admin_user):
        response = login(admin_user).get("/audit/log/?at_within=1y")
        assert response.status_code == 400
        assert "at_within" in response.content.decode()

    def test_the_api_and_the_csv_export_take_the_preset(self, admin_user, entries):
        body = api_for(admin_user).get("/api/v1/audit-entries/?at_within=24h").json()
        assert [e["action"] for e in body["results"]] == ["test.hour", "test.day"]
        csv = b"".join(login(admin_user).get("/audit/log/export.csv?at_within=1h")).decode()
        assert "test.hour" in csv and "test.day" not in csv


def page_ids(body: dict, key: str) -> list[str]:
    return [row[key] for row in body["results"]]


class TestStuckSortInTheApi:
    def test_tasks_longest_stuck_first_paged_forward_and_back(self, support_user):
        now = timezone.now()
        made = [make_task("running", now=now, minutes_ago=500 - i) for i in range(7)]
        make_task("completed", now=now, minutes_ago=900)  # terminal: never stuck
        api = api_for(support_user)
        first = api.get("/api/v1/tasks/?sort=stuck&page_size=3").json()
        assert page_ids(first, "task_id") == [t.task_id for t in made[:3]]
        second = api.get(first["next"]).json()
        assert "sort=stuck" in first["next"]
        assert page_ids(second, "task_id") == [t.task_id for t in made[3:6]]
        third = api.get(second["next"]).json()
        assert page_ids(third, "task_id") == [made[6].task_id] and third["next"] is None
        back = api.get(second["previous"]).json()
        assert page_ids(back, "task_id") == page_ids(first, "task_id")

    def test_the_api_orders_exactly_as_the_html_list(self, support_user):
        now = timezone.now()
        for minutes in (70, 400, 90, 3000, 5):
            make_task("running", now=now, minutes_ago=minutes)
        make_task("failed", now=now, minutes_ago=10_000)
        html = login(support_user).get("/tasks/?sort=stuck&stuck=60").content.decode()
        listed = re.findall(r'href="/tasks/([^/"]+)/\?protocol=', html)
        body = api_for(support_user).get("/api/v1/tasks/?sort=stuck&stuck=60").json()
        assert page_ids(body, "task_id") == listed and len(listed) == 4

    def test_operations_longest_stuck_first(self, support_user):
        now = timezone.now()
        old = make_operation(
            "running",
            createdAt=iso(now - timezone.timedelta(hours=9)),
            updatedAt=iso(now - timezone.timedelta(hours=8)),
        )
        newer = make_operation(
            "queued",
            createdAt=iso(now - timezone.timedelta(hours=3)),
            updatedAt=iso(now - timezone.timedelta(hours=2)),
        )
        make_operation("succeeded", updatedAt=iso(now - timezone.timedelta(hours=20)))
        body = api_for(support_user).get("/api/v1/operations/?sort=stuck").json()
        assert page_ids(body, "operation_id") == [old.operation_id, newer.operation_id]

    @pytest.mark.parametrize(
        "cursor",
        [
            "not-a-cursor",
            base64.urlsafe_b64encode(b'["t", "yesterday", 5]').decode(),
            encode_cursor("tsk_1", 5),  # a cursor of a text column, not of a time
            # A fixed id: one made of the clock differs from run to run (no `--lf`, no xdist).
            pytest.param(
                base64.urlsafe_b64encode(
                    json.dumps(["t", iso(timezone.now()), 0]).encode()
                ).decode(),
                id="time-now-0",
            ),
        ],
    )
    def test_a_forged_or_mismatched_cursor_is_a_400(self, support_user, cursor):
        make_task("running")
        api = api_for(support_user)
        for path in ("/api/v1/tasks/", "/api/v1/operations/"):
            for param in ("after", "before"):
                response = api.get(path, {"sort": "stuck", param: cursor})
                assert response.status_code == 400, (path, param)
                assert "cursor" in response.json()

    def test_an_unknown_sort_is_a_400_naming_the_choices(self, support_user):
        response = api_for(support_user).get("/api/v1/tasks/?sort=oldest")
        assert response.status_code == 400
        assert "stuck" in response.json()["sort"][0]

    def test_the_schema_documents_the_sort(self, support_user):
        schema = login(support_user).get("/api/schema/?format=json").json()
        for path in ("/api/v1/tasks/", "/api/v1/operations/"):
            params = {p["name"]: p for p in schema["paths"][path]["get"]["parameters"]}
            assert params["sort"]["schema"]["enum"] == ["created", "updated", "stuck"], path
            assert "only queued and processing work" in params["sort"]["description"]


def test_a_saved_views_sort_orders_the_api_list(support_user):
    from beeos_console.savedviews.models import SavedView

    now = timezone.now()
    newer = make_task("running", now=now, minutes_ago=90)
    oldest = make_task("running", now=now, minutes_ago=600)
    done = make_task("completed", now=now, minutes_ago=900)
    view = SavedView.objects.create(
        owner=support_user, name="Stuck", kind="tasks", query="sort=stuck"
    )
    api = api_for(support_user)
    body = api.get(f"/api/v1/tasks/?view={view.pk}&page_size=1").json()
    assert page_ids(body, "task_id") == [oldest.task_id]
    assert page_ids(api.get(body["next"]).json(), "task_id") == [newer.task_id]
    # A sort given beside the view wins, as every other parameter does.
    body = api.get(f"/api/v1/tasks/?view={view.pk}&sort=created").json()
    assert page_ids(body, "task_id") == [newer.task_id, oldest.task_id, done.task_id]
