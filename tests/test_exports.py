"""CSV exports of every list (tasks, messages, operations, audit log) under the current filter."""

from __future__ import annotations

import csv
import io

import pytest
from django.db.models import QuerySet
from django.http import QueryDict
from django.test import Client

from beeos_console.auditlog.models import AuditEntry
from beeos_console.auditlog.services import Actor, record
from operations.filtersets import RuntimeOperationFilterSet
from operations.models import RuntimeOperation
from tasks.filtersets import MessageFilterSet, TaskFilterSet
from tasks.models import Message, Task

from .factories import make_message, make_operation, make_task

pytestmark = pytest.mark.django_db


def read(response) -> tuple[list[str], list[list[str]], str]:
    """(header, data rows, the last line) of a streamed export."""
    assert response.status_code == 200, response
    assert response.streaming
    assert response["Content-Type"].startswith("text/csv")
    rows = list(csv.reader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert len(rows[-1]) == 1 and rows[-1][0].startswith("#"), rows[-1]
    return rows[0], rows[1:-1], rows[-1][0]


def expected(filterset_class, query: str, model, sort: str = "created_at") -> list:
    qs = filterset_class(QueryDict(query), queryset=model.objects.all()).qs
    return list(qs.order_by(f"-{sort}", "-pk"))


@pytest.fixture
def data():
    tasks = [
        make_task(status, minutes_ago=i)
        for i, status in enumerate(["running", "failed", "failed", "completed", "timeout"])
    ]
    for t in tasks[:2]:
        make_message(t, state="completed")
    make_message(tasks[2], state="failed")
    ops = [make_operation(s) for s in ("running", "failed", "outcome_unknown", "running")]
    return tasks, ops


class TestEachExportMatchesItsList:
    def test_tasks(self, client, support_user, data):
        client.force_login(support_user)
        query = "raw_state=failed&protocol=openapi"
        page = client.get(f"/tasks/?{query}").content.decode()
        header, rows, last = read(client.get(f"/tasks/export.csv?{query}"))
        want = expected(TaskFilterSet, query, Task)
        assert len(want) == 2
        assert [r[0] for r in rows] == [t.task_id for t in want]
        assert all(t.task_id in page for t in want)
        assert header == [
            "task_id",
            "protocol",
            "status",
            "reason",
            "outcome_certainty",
            "retry_policy",
            "raw_state",
            "agent_id",
            "created_at",
            "updated_at",
        ]
        first = dict(zip(header, rows[0], strict=True))
        task = want[0]
        assert first["raw_state"] == task.raw_state == "failed"
        assert first["status"] == task.status
        assert first["reason"] == task.reason
        assert first["retry_policy"] == task.retry_policy
        assert first["created_at"] == task.created_at.isoformat()
        assert first["created_at"].endswith("+00:00")
        assert last == "# 2 rows"

    def test_the_sort_of_the_list_is_the_order_of_the_file(self, client, support_user, data):
        client.force_login(support_user)
        _, rows, _ = read(client.get("/tasks/export.csv?sort=updated"))
        assert [r[0] for r in rows] == [
            t.task_id for t in expected(TaskFilterSet, "", Task, sort="updated_at")
        ]

    def test_longest_stuck_first_is_the_order_of_the_file_too(self, client, support_user, data):
        for minutes in (30, 90, 60):
            make_task("running", minutes_ago=minutes)
        client.force_login(support_user)
        _, rows, _ = read(client.get("/tasks/export.csv?sort=stuck"))
        assert len(rows) == 4
        page = client.get("/tasks/?sort=stuck").content.decode()
        ids = [r[0] for r in rows]
        assert ids and all(i in page for i in ids)
        stuck = [t for t in Task.objects.order_by("updated_at", "pk") if t.task_id in ids]
        assert ids == [t.task_id for t in stuck]  # oldest last change first, not newest

    def test_messages(self, client, support_user, data):
        client.force_login(support_user)
        header, rows, last = read(client.get("/messages/export.csv?state=completed"))
        want = expected(MessageFilterSet, "state=completed", Message)
        assert len(want) == 2
        assert [r[0] for r in rows] == [m.message_id for m in want]
        row = dict(zip(header, rows[0], strict=True))
        assert row["task_id"] == want[0].task.task_id
        assert row["state"] == "completed"
        assert last == "# 2 rows"

    def test_operations(self, client, support_user, data):
        client.force_login(support_user)
        query = "raw_status=running&raw_status=outcome_unknown"
        header, rows, last = read(client.get(f"/operations/export.csv?{query}"))
        want = expected(RuntimeOperationFilterSet, query, RuntimeOperation)
        assert len(want) == 3
        assert [r[0] for r in rows] == [o.operation_id for o in want]
        for name in ("raw_status", "effect_state", "error_code", "retry_policy", "reason"):
            assert name in header
        row = dict(zip(header, rows[0], strict=True))
        assert row["raw_status"] == want[0].raw_status
        assert row["outcome_certainty"] == want[0].outcome_certainty
        assert last == "# 3 rows"

    def test_audit_log(self, client, admin_user):
        client.force_login(admin_user)
        record(actor=Actor.feeder("olga"), action="task.cancel", object_kind="task", object_id="t1")
        record(actor=Actor.feeder("sam"), action="task.cancel", object_kind="task", object_id="t2")
        header, rows, last = read(client.get("/audit/log/export.csv?actor=olga"))
        row = dict(zip(header, rows[0], strict=True))
        assert [r["object_id"] for r in [row]] == ["t1"] and len(rows) == 1
        assert row["at"] == AuditEntry.objects.get(object_id="t1").at.isoformat()
        assert last == "# 1 row"

    def test_nothing_matching_is_a_header_and_zero(self, client, support_user, data):
        client.force_login(support_user)
        _, rows, last = read(client.get("/tasks/export.csv?q=nothing-like-this"))
        assert rows == [] and last == "# 0 rows"

    def test_bad_filters_are_a_400_not_a_guess(self, client, support_user):
        client.force_login(support_user)
        response = client.get("/tasks/export.csv?created_after=yesterday")
        assert response.status_code == 400
        assert "could not be applied" in response.content.decode()


class TestTheLink:
    def test_every_list_links_its_export_with_the_filter(self, client, admin_user, data):
        client.force_login(admin_user)
        for page, export in (
            ("/tasks/?status=failed", "/tasks/export.csv?status=failed"),
            ("/messages/?state=failed", "/messages/export.csv?state=failed"),
            ("/operations/?raw_status=failed", "/operations/export.csv?raw_status=failed"),
            ("/audit/log/?actor=olga", "/audit/log/export.csv?actor=olga"),
        ):
            assert f'href="{export}"' in client.get(page).content.decode(), page

    def test_the_link_is_inside_the_htmx_results_and_follows_the_filter(
        self, client, support_user, data
    ):
        client.force_login(support_user)
        fragment = client.get(
            "/tasks/?status=completed&sort=updated&after=",
            HTTP_HX_REQUEST="true",
            HTTP_HX_TARGET="results",
        ).content.decode()
        assert "<html" not in fragment
        assert 'href="/tasks/export.csv?status=completed&amp;sort=updated"' in fragment


class TestCap:
    def test_above_the_cap_the_file_says_it_was_cut(self, client, support_user, data, settings):
        settings.CONSOLE_EXPORT_MAX_ROWS = 3
        client.force_login(support_user)
        _, rows, last = read(client.get("/tasks/export.csv"))
        assert len(rows) == 3
        assert last.startswith("# cut at 3 rows")
        assert "narrow" in last

    def test_exactly_the_cap_is_not_cut(self, client, support_user, data, settings):
        settings.CONSOLE_EXPORT_MAX_ROWS = 2
        client.force_login(support_user)
        _, rows, last = read(client.get("/tasks/export.csv?raw_state=failed"))
        assert len(rows) == 2 and last == "# 2 rows"

    def test_thousands_are_grouped(self):
        from beeos_console.core.exports import count_line

        assert count_line(12345, cut=False) == "# 12,345 rows"
        assert count_line(100000, cut=True).startswith("# cut at 100,000 rows")


FORMULAS = ['=HYPERLINK("http://evil")', "+1+1", "-2+3", "@SUM(A1)"]


def test_formula_cells_are_neutralised(client, admin_user):
    client.force_login(admin_user)
    for i, formula in enumerate(FORMULAS):
        make_task("running", agent_id=f"{formula}{i}")
        record(actor=Actor.feeder(formula), action="x", object_kind="task", object_id=formula)
    for url in ("/tasks/export.csv", "/audit/log/export.csv"):
        _, rows, _ = read(client.get(url))
        assert rows
        cells = [cell for row in rows for cell in row]
        assert any(cell.startswith("'=HYPERLINK") for cell in cells), url
        for cell in cells:
            assert not cell or cell[0] not in "=+-@\t\r", (url, cell)


def test_streaming_reads_a_server_side_cursor_never_the_whole_result(
    client, support_user, data, monkeypatch
):
    """Rows come from ``.iterator()`` (chunks from a cursor), never a materialised list."""
    client.force_login(support_user)
    response = client.get("/tasks/export.csv")
    assert response.streaming

    def no_fetch_all(self):
        raise AssertionError("the export materialised a whole queryset")

    chunks: list[int] = []
    real_iterator = QuerySet.iterator

    def spy(self, chunk_size=None):
        chunks.append(chunk_size)
        return real_iterator(self, chunk_size=chunk_size)

    monkeypatch.setattr(QuerySet, "_fetch_all", no_fetch_all)
    monkeypatch.setattr(QuerySet, "iterator", spy)
    lines = list(response.streaming_content)
    assert chunks == [2000]
    # One chunk of text per CSV line: header, 5 tasks, the count line.
    assert len(lines) == 7


class TestRoles:
    @pytest.mark.parametrize(
        "url", ["/tasks/export.csv", "/messages/export.csv", "/operations/export.csv"]
    )
    def test_support_and_up_export_the_lists(self, client, support_user, operator_user, url):
        for user in (support_user, operator_user):
            client.force_login(user)
            assert client.get(url).status_code == 200

    def test_the_audit_log_export_is_admin_only(
        self, client, support_user, operator_user, admin_user
    ):
        for user in (support_user, operator_user):
            client.force_login(user)
            response = client.get("/audit/log/export.csv")
            assert response.status_code == 403
            assert "admin role" in response.content.decode()
        client.force_login(admin_user)
        assert client.get("/audit/log/export.csv").status_code == 200

    def test_anonymous_and_feeder_get_nothing(self, django_user_model):
        from django.contrib.auth.models import Group

        anonymous = Client()
        response = anonymous.get("/tasks/export.csv")
        assert response.status_code in (302, 401, 403)
        assert not getattr(response, "streaming", False)
        feeder = django_user_model.objects.create_user(username="feed", password="x")
        feeder.groups.add(Group.objects.get_or_create(name="feeder")[0])
        client = Client()
        client.force_login(feeder)
        assert client.get("/tasks/export.csv").status_code == 403
