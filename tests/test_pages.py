"""Every page needs a login; the landing page lists tasks and operations, escaped."""

from __future__ import annotations

import pytest
from django.urls import reverse

from beeos_console.auditlog.services import Actor
from tasks.services.write import ingest_openapi_task

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("name", ["dashboard", "admin:index"])
def test_pages_redirect_anonymous_users_to_login(client, name):
    response = client.get(reverse(name))
    assert response.status_code == 302
    assert "/login/" in response["Location"]


def test_probes_need_no_login(client):
    assert client.get("/healthz").json() == {"status": "ok"}
    assert client.get("/readyz").json() == {"status": "ok"}


def test_login_page_renders_with_csrf(client):
    response = client.get(reverse("login"))
    assert response.status_code == 200
    assert b"csrfmiddlewaretoken" in response.content


def test_task_list_shows_raw_state_beside_status_and_escapes_ids(client, support_user):
    ingest_openapi_task(
        {
            "task_id": "tsk_<b>bold</b>",
            "agent_id": "agt_1",
            "status": "input_required",
            "created_at": "2026-11-30T08:00:00Z",
        },
        actor=Actor.system(),
    )
    client.force_login(support_user)
    response = client.get(reverse("tasks:list"))
    html = response.content.decode()
    assert response.status_code == 200
    assert "tsk_&lt;b&gt;bold&lt;/b&gt;" in html
    assert "<b>bold</b>" not in html
    assert '<code class="raw">input_required</code>' in html
    assert 'class="badge badge-blue">processing<' in html
    assert "Gateway: Local (demo)" in html


def test_admin_registers_every_model_read_only(client, admin_user):
    from django.apps import apps
    from django.contrib import admin as django_admin

    ours = [m for m in apps.get_models() if m._meta.app_label in ("console", "tasks", "operations")]
    missing = [m.__name__ for m in ours if m not in django_admin.site._registry]
    assert missing == []
    client.force_login(admin_user)
    for model in ours:
        meta = model._meta
        response = client.get(f"/admin/{meta.app_label}/{meta.model_name}/")
        assert response.status_code == 200, meta.label
        assert client.get(f"/admin/{meta.app_label}/{meta.model_name}/add/").status_code == 403


def test_admin_is_for_superusers_only(client, operator_user):
    client.force_login(operator_user)
    response = client.get("/admin/")
    assert response.status_code == 302  # to the admin login: not staff
