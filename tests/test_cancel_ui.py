"""Cancel as operators meet it: pages, htmx fragments, REST, roles, bulk cancel."""

from __future__ import annotations

import json
import re

import pytest
from django.contrib.auth.models import Group
from django.core.management import call_command
from rest_framework.test import APIClient

from beeos_console.auditlog.models import AuditEntry
from beeos_console.cancels.models import BulkCancel, CancelRequest
from beeos_console.core import tokens
from operations.models import RuntimeOperation
from tasks.models import Task

from .factories import make_operation, make_task, openapi_task, operation_snapshot

pytestmark = pytest.mark.django_db


@pytest.fixture
def operator(client, operator_user):
    client.force_login(operator_user)
    return client


def detail(client, task) -> str:
    return client.get(f"/tasks/{task.task_id}/?protocol={task.protocol}").content.decode()


class TestSingleCancelPage:
    def test_operator_sees_the_form_with_a_fresh_idempotency_key(self, operator):
        task = make_task("running")
        html = detail(operator, task)
        assert "Cancel this task…" in html
        assert re.search(r'name="idempotency_key" value="console-[0-9a-f-]{36}"', html)
        assert "csrfmiddlewaretoken" in html

    def test_htmx_cancel_swaps_the_result_and_the_status_card(self, operator):
        task = make_task("running")
        response = operator.post(
            f"/tasks/{task.task_id}/cancel/?protocol=openapi",
            {"reason": "customer asked", "idempotency_key": "k-ui-1", "protocol": "openapi"},
            HTTP_HX_REQUEST="true",
        )
        html = response.content.decode()
        assert response.status_code == 200
        assert "Cancelled." in html and "local gateway" in html
        assert 'id="status-card" hx-swap-oob="true"' in html
        assert 'class="badge badge-amber">cancelled<' in html
        # The swapped-in card is whole: the status in words (issue #14: no rule
        # syntax for an operator), no empty wire spelling.
        assert "The outcome is known" in html and "`" not in html
        assert "on the wire: <code></code>" not in html
        task.refresh_from_db()
        assert task.raw_state == "canceled"

    def test_without_javascript_it_redirects_with_a_message(self, operator):
        task = make_task("running")
        response = operator.post(
            f"/tasks/{task.task_id}/cancel/?protocol=openapi",
            {"reason": "stuck for hours", "protocol": "openapi"},
            follow=True,
        )
        html = response.content.decode()
        assert "Cancelled in the mirror" in html
        assert '<code class="raw">canceled</code>' in html

    def test_terminal_task_shows_why_and_no_form(self, operator):
        task = make_task("completed")
        html = detail(operator, task)
        assert "Cannot cancel: The task has already ended" in html
        assert "Cancel this task…" not in html

    def test_missing_reason_is_a_clear_error_and_nothing_happens(self, operator):
        task = make_task("running")
        response = operator.post(
            f"/tasks/{task.task_id}/cancel/?protocol=openapi",
            {"reason": "", "protocol": "openapi"},
            HTTP_HX_REQUEST="true",
        )
        assert response.status_code == 400
        assert "A reason is required" in response.content.decode()
        task.refresh_from_db()
        assert task.raw_state == "running" and CancelRequest.objects.count() == 0

    def test_operation_with_a_cancel_request_shows_it_instead_of_a_button(self, operator):
        op = make_operation(
            "running",
            cancelRequest={
                "requestedBy": "usr_ana",
                "reason": "model switch by mistake",
                "requestedAt": "2026-11-30T08:00:00Z",
            },
        )
        html = operator.get(f"/operations/{op.operation_id}/").content.decode()
        assert "Cancel requested by" in html and "model switch by mistake" in html
        assert "Cancel this operation…" not in html

    def test_committed_operation_says_the_effect_happened(self, operator):
        op = make_operation("runtime_committed")
        html = operator.get(f"/operations/{op.operation_id}/").content.decode()
        assert "effect has already happened" in html

    def test_support_sees_no_cancel_button_and_gets_403(self, client, support_user):
        client.force_login(support_user)
        task = make_task("running")
        html = detail(client, task)
        assert "Cancel this task…" not in html
        assert "Read-only: cancelling needs the operator role" in html
        response = client.post(f"/tasks/{task.task_id}/cancel/?protocol=openapi", {"reason": "x"})
        assert response.status_code == 403
        assert "operator role" in response.content.decode()
        task.refresh_from_db()
        assert task.raw_state == "running"


class TestRestCancel:
    @pytest.fixture
    def api(self, operator_user) -> APIClient:
        _, key = tokens.issue(operator_user)
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
        return client

    def test_task_cancel_json(self, api):
        task = make_task("running")
        response = api.post(
            f"/api/v1/tasks/{task.task_id}/cancel",
            {"reason": "stop"},
            format="json",
            HTTP_IDEMPOTENCY_KEY="api-key-1",
        )
        assert response.status_code == 200
        body = response.json()
        assert (body["result"], body["idempotency_key"]) == ("cancelled", "api-key-1")
        assert body["object"]["status"] == "cancelled"
        again = api.post(
            f"/api/v1/tasks/{task.task_id}/cancel/",
            {"reason": "stop"},
            format="json",
            HTTP_IDEMPOTENCY_KEY="api-key-1",
        )
        assert again.json()["replayed"] is True

    def test_refusals_are_409_with_words(self, api):
        done = make_task("completed")
        response = api.post(f"/api/v1/tasks/{done.task_id}/cancel", {"reason": "x"}, format="json")
        assert response.status_code == 409
        assert "already ended" in response.json()["message"]
        op = make_operation("outcome_unknown")
        response = api.post(
            f"/api/v1/operations/{op.operation_id}/cancel", {"reason": "x"}, format="json"
        )
        assert response.status_code == 409
        assert "replay is unsafe" in response.json()["message"]

    def test_operation_cancel_and_missing_reason(self, api):
        op = make_operation("queued", effectState="queued")
        assert (
            api.post(f"/api/v1/operations/{op.operation_id}/cancel", {}, format="json").status_code
            == 400
        )
        response = api.post(
            f"/api/v1/operations/{op.operation_id}/cancel", {"reason": "x"}, format="json"
        )
        assert response.status_code == 200
        assert response.json()["object"]["raw_status"] == "cancelled"

    def test_session_cancel_needs_csrf(self, operator_user):
        task = make_task("running")
        client = APIClient(enforce_csrf_checks=True)
        client.force_login(operator_user)
        response = client.post(
            f"/api/v1/tasks/{task.task_id}/cancel", {"reason": "x"}, format="json"
        )
        assert response.status_code == 403
        task.refresh_from_db()
        assert task.raw_state == "running"


# --- every mutating endpoint × every role -----------------------------------------------

ROLES = ["none", "support", "operator", "admin", "feeder"]
# Which roles may use each mutating endpoint.
ALLOWED = {
    "html task cancel": {"operator", "admin"},
    "html operation cancel": {"operator", "admin"},
    "html bulk cancel": {"operator", "admin"},
    "api task cancel": {"operator", "admin"},
    "api operation cancel": {"operator", "admin"},
    "api ingest": {"feeder"},
}


def call_endpoint(name: str, user) -> int:
    task = make_task("running")
    op = make_operation("running")
    if name.startswith("html"):
        from django.test import Client

        client = Client()
        client.force_login(user)
        url = {
            "html task cancel": f"/tasks/{task.task_id}/cancel/?protocol=openapi",
            "html operation cancel": f"/operations/{op.operation_id}/cancel/",
            "html bulk cancel": "/bulk/task/cancel/",
        }[name]
        return client.post(url, {"reason": "x", "scope": "all"}).status_code
    _, key = tokens.issue(user)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    if name == "api ingest":
        body = {"records": [{"kind": "openapi_task", "data": openapi_task()}]}
        return client.post("/api/v1/ingest/", body, format="json").status_code
    url = {
        "api task cancel": f"/api/v1/tasks/{task.task_id}/cancel",
        "api operation cancel": f"/api/v1/operations/{op.operation_id}/cancel",
    }[name]
    return client.post(url, {"reason": "x"}, format="json").status_code


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("endpoint", list(ALLOWED))
def test_every_mutating_endpoint_by_every_role(django_user_model, endpoint, role):
    user = django_user_model.objects.create_user(f"user-{role}", password="pw")
    if role != "none":
        user.groups.add(Group.objects.get_or_create(name=role)[0])
    code = call_endpoint(endpoint, user)
    if role in ALLOWED[endpoint]:
        assert code not in (401, 403), f"{role} refused on {endpoint}"
    else:
        assert code == 403, f"{role} got {code} on {endpoint}"


# --- bulk ------------------------------------------------------------------------------


class TestBulkCancel:
    def test_preview_counts_and_reasons(self, operator):
        for _ in range(3):
            make_task("running")
        make_task("completed")
        make_task("paused_by_ops")
        html = operator.get("/bulk/task/cancel/?scope=all&query=protocol%3Dopenapi").content
        html = html.decode()
        assert re.search(r"<strong class=\"num\">3</strong> tasks will be cancelled", html)
        assert "already completed" in html and "unmapped state" in html
        assert "cancel 3 tasks" in html

    def test_wrong_confirmation_starts_nothing(self, operator):
        make_task("running")
        response = operator.post(
            "/bulk/task/cancel/",
            {"scope": "all", "query": "", "reason": "cleanup", "confirmation": "yes"},
        )
        assert response.status_code == 400
        assert "Type “cancel 1 task”" in response.content.decode()
        assert BulkCancel.objects.count() == 0

    @pytest.mark.django_db(transaction=True)
    def test_confirmed_batch_runs_on_the_worker_with_a_report(self, operator):
        running = [make_task("running") for _ in range(4)]
        make_task("completed")
        response = operator.post(
            "/bulk/task/cancel/",
            {
                "scope": "all",
                "query": "status=processing",
                "reason": "incident 4711 cleanup",
                "confirmation": "Cancel 4 tasks",
            },
        )
        assert response.status_code == 302
        batch = BulkCancel.objects.get()
        assert response["Location"] == f"/bulk/{batch.pk}/"
        page = operator.get(f"/bulk/{batch.pk}/").content.decode()
        assert "Queued" in page and 'hx-trigger="every 2s"' in page
        # The real django-tasks database worker picks it up.
        call_command("db_worker", "--batch", "--no-startup-delay", verbosity=0)
        batch.refresh_from_db()
        assert (batch.state, batch.done, batch.total) == ("finished", 4, 4)
        assert batch.counts["results"] == {"cancelled": 4}
        for task in running:
            task.refresh_from_db()
            assert task.status == "cancelled"
        page = operator.get(f"/bulk/{batch.pk}/").content.decode()
        assert "Finished" in page and page.count("Cancelled in the mirror") == 4
        assert AuditEntry.objects.filter(action="task.cancel").count() == 4
        assert AuditEntry.objects.filter(action="task.bulk_cancel").count() == 1

    @pytest.mark.django_db(transaction=True)
    def test_selected_rows_only(self, operator):
        a, b, c = (make_task("running") for _ in range(3))
        html = operator.get(
            "/bulk/task/cancel/",
            {"scope": "selected", "pick": [f"openapi:{a.task_id}", f"openapi:{b.task_id}"]},
        ).content.decode()
        assert "cancel 2 tasks" in html
        operator.post(
            "/bulk/task/cancel/",
            {
                "scope": "selected",
                "pick": [f"openapi:{a.task_id}", f"openapi:{b.task_id}"],
                "reason": "picked",
                "confirmation": "cancel 2 tasks",
            },
        )
        call_command("db_worker", "--batch", "--no-startup-delay", verbosity=0)
        statuses = dict(Task.objects.values_list("task_id", "status"))
        assert statuses[a.task_id] == statuses[b.task_id] == "cancelled"
        assert statuses[c.task_id] == "processing"

    def test_operations_bulk_skips_committed_ones(self, operator):
        make_operation("running")
        make_operation("queued", effectState="queued")
        make_operation("runtime_committed")
        html = operator.get("/bulk/operation/cancel/?scope=all&query=").content.decode()
        assert "cancel 2 operations" in html
        assert "the effect has already happened" in html

    def test_list_page_offers_bulk_to_operators_only(self, operator, client, support_user):
        make_task("running")
        html = operator.get("/tasks/").content.decode()
        assert 'id="bulk-form"' in html and 'form="bulk-form"' in html
        client.force_login(support_user)
        assert 'id="bulk-form"' not in client.get("/tasks/").content.decode()


def test_snapshot_json_for_the_operation_cancel(operator):
    """The local cancel goes through the ordinary write path (sequence moves on)."""
    op = make_operation("running")
    operator.post(f"/operations/{op.operation_id}/cancel/", {"reason": "x"})
    op = RuntimeOperation.objects.get(pk=op.pk)
    assert int(op.sequence) == int(json.loads(json.dumps(operation_snapshot()))["sequence"]) + 1


class TestCancelFromAListRow:
    def test_row_confirmation_and_in_place_update(self, operator):
        task = make_task("running")
        form = operator.get(
            f"/tasks/{task.task_id}/cancel/?protocol=openapi&row=1", HTTP_HX_REQUEST="true"
        ).content.decode()
        assert form.startswith('<tr class="cancel-row"') and 'name="reason"' in form
        result = operator.post(
            f"/tasks/{task.task_id}/cancel/?protocol=openapi&row=1",
            {"reason": "from the list", "protocol": "openapi"},
            HTTP_HX_REQUEST="true",
        ).content.decode()
        assert "Cancelled." in result
        assert f'<tr id="task-row-{task.pk}" hx-swap-oob="outerHTML">' in result
        assert 'class="badge badge-amber">cancelled<' in result
        # The redrawn row lines up with the list's (checkbox column kept) and offers
        # neither a checkbox nor a cancel link any more.
        row = result[result.index(f'<tr id="task-row-{task.pk}"') :]
        listed = operator.get("/tasks/").content.decode()
        assert row.count("<td") == listed[listed.index("<tbody>") :].split("</tr>")[0].count("<td")
        assert 'name="pick"' not in row and "Cancel…" not in row

    def test_without_javascript_the_row_link_leads_to_the_detail_form(self, operator):
        task = make_task("running")
        response = operator.get(f"/tasks/{task.task_id}/cancel/?protocol=openapi")
        assert response.status_code == 302
        assert response["Location"].endswith("#cancel")
