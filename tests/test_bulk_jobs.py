"""The bulk-jobs page, the bulk preview's item list, and "nothing selected"."""

from __future__ import annotations

import pytest

from beeos_console.auditlog.services import Actor
from beeos_console.cancels import bulk
from tasks.models import Task

from .factories import make_message, make_task

pytestmark = pytest.mark.django_db


@pytest.fixture
def operator(client, operator_user):
    client.force_login(operator_user)
    return client


def test_the_bulk_jobs_page_lists_every_job_with_its_progress(operator, settings):
    settings.BEEOS_API_URL = ""
    tasks = [make_task("running") for _ in range(3)]
    selection = bulk.preview("task", Task.objects.filter(pk__in=[t.pk for t in tasks]))
    batch = bulk.start(selection, actor=Actor("olga-operator"), reason="stuck", query="")
    bulk.run_bulk_cancel.call(batch.pk)
    html = operator.get("/bulk/").content.decode()
    assert f'href="/bulk/{batch.pk}/"' in html
    assert "3 / 3" in html and "<code>cancelled</code> 3" in html and "stuck" in html
    # Linked from the navigation for operators.
    assert 'href="/bulk/"' in operator.get("/tasks/").content.decode()


def test_support_staff_cannot_open_the_bulk_jobs_page(client, support_user):
    client.force_login(support_user)
    assert client.get("/bulk/").status_code == 403


def test_the_preview_lists_the_items_it_will_cancel(operator):
    running = make_task("running")
    done = make_task("completed")
    html = operator.get("/bulk/task/cancel/?scope=all&query=").content.decode()
    assert f"<code>{running.task_id}</code>" in html
    assert f"<code>{done.task_id}</code>" in html  # listed among the skipped examples
    assert "will be cancelled" in html


def test_cancel_selected_with_nothing_selected_says_so(operator):
    make_task("running")
    response = operator.get("/bulk/task/cancel/?scope=selected&query=status%3Dprocessing")
    assert response.status_code == 400
    html = response.content.decode()
    assert "Nothing is selected" in html and "cancel 0" not in html


def test_after_an_htmx_cancel_the_audit_trail_refreshes_in_place(operator):
    task = make_task("running")
    response = operator.post(
        f"/tasks/{task.task_id}/cancel/?protocol=openapi",
        {"reason": "customer asked", "idempotency_key": "k-trail-1", "protocol": "openapi"},
        HTTP_HX_REQUEST="true",
    )
    html = response.content.decode()
    assert 'id="audit-trail" hx-swap-oob="true"' in html
    # The new entry is in the swapped-in trail: the cancel and the state change it made.
    trail = html.split('id="audit-trail"', 1)[1]
    assert "task.cancel" in trail and "customer asked" in trail
    detail = operator.get(f"/tasks/{task.task_id}/").content.decode()
    assert '<div id="audit-trail">' in detail


def test_a_warning_before_cancelling_a_task_whose_latest_reply_has_ended(operator):
    task = make_task("running")
    make_message(task, state="completed", stop_reason="end_turn")
    html = operator.get(f"/tasks/{task.task_id}/").content.decode()
    assert "cancel-warning" in html and "latest reply has already ended (completed" in html
    quiet = make_task("running")
    make_message(quiet, state="streaming", stop_reason=None)
    assert "cancel-warning" not in operator.get(f"/tasks/{quiet.task_id}/").content.decode()


def test_a_warning_before_cancelling_a_task_waiting_for_sign_in(operator):
    task = make_task("auth_required")
    html = operator.get(f"/tasks/{task.task_id}/").content.decode()
    assert "waiting for the caller to sign in" in html
