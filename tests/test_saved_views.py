"""Saved views: private or shared filters of a list, in the pages and the API."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest
from django.contrib.auth.models import Group
from django.test import Client

from beeos_console.auditlog.models import AuditEntry
from beeos_console.core import roles
from beeos_console.savedviews.models import SavedView

from .factories import make_operation, make_task

pytestmark = pytest.mark.django_db

QUERY = "status=failed&status=processing&protocol=openapi&sort=updated"


def save(client, name="Failing", kind="tasks", query=QUERY, shared=False):
    data = {"name": name, "kind": kind, "query": query}
    if shared:
        data["shared"] = "true"
    return client.post("/views/save/", data)


def login(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


class TestSaving:
    def test_save_private_and_open_restores_exactly_the_filters(self, support_user):
        client = login(support_user)
        response = save(client, query=QUERY + "&after=abc&refresh=true")
        view = SavedView.objects.get()
        assert (view.owner, view.kind, view.shared) == (support_user, "tasks", False)
        # The page cursor and auto-refresh are not part of a view.
        assert parse_qs(view.query) == parse_qs(QUERY)
        assert response.status_code == 302
        opened = client.get(f"/views/{view.pk}/")
        assert opened.status_code == 302
        parts = urlsplit(opened["Location"])
        assert parts.path == "/tasks/"
        assert parse_qs(parts.query) == parse_qs(QUERY)
        page = client.get(opened["Location"])
        assert page.status_code == 200
        form = page.context["form"]
        assert form.data.getlist("status") == ["failed", "processing"]
        assert form.data.get("sort") == "updated"
        # Private views are not audited.
        assert not AuditEntry.objects.filter(object_kind="saved_view").exists()

    def test_the_list_page_offers_save_with_the_current_filter_in_the_results(self, support_user):
        client = login(support_user)
        fragment = client.get(
            "/tasks/?status=failed&after=", HTTP_HX_REQUEST="true", HTTP_HX_TARGET="results"
        ).content.decode()
        assert 'name="query" value="status=failed"' in fragment
        assert 'name="kind" value="tasks"' in fragment
        # Support users cannot share: the form says so instead of offering it.
        assert 'name="shared"' not in fragment and "only operators and admins" in fragment
        page = client.get("/tasks/").content.decode()
        assert 'hx-get="/views/?kind=tasks"' in page

    def test_save_shared_is_audited_and_seen_by_everyone(
        self, operator_user, support_user, admin_user
    ):
        operator = login(operator_user)
        assert save(operator, name="Team: failing", shared=True).status_code == 302
        view = SavedView.objects.get()
        assert view.shared
        created = AuditEntry.objects.get(action="saved_view.create")
        assert created.object_id == str(view.pk) and created.actor == operator_user.username
        menu = login(support_user).get("/views/?kind=tasks", HTTP_HX_REQUEST="true")
        assert "Team: failing" in menu.content.decode()
        assert f'href="/tasks/?{view.query.replace("&", "&amp;")}"' in menu.content.decode()

    def test_another_user_sees_shared_not_private(self, support_user, operator_user):
        save(login(support_user), name="Mine only")
        save(login(operator_user), name="Everybody's", shared=True)
        save(login(operator_user), name="Olga's own")
        other = login(support_user)
        names = [row["name"] for row in other.get("/api/v1/saved-views/").json()]
        assert sorted(names) == ["Everybody's", "Mine only"]
        page = other.get("/views/").content.decode()
        assert "Everybody&#x27;s" in page and "Olga&#x27;s own" not in page
        private = SavedView.objects.get(name="Olga's own")
        assert other.get(f"/views/{private.pk}/").status_code == 404

    def test_bad_input_is_a_400(self, support_user):
        client = login(support_user)
        assert save(client, name="").status_code == 400
        assert save(client, kind="nonsense").status_code == 400
        assert SavedView.objects.count() == 0


class TestPermissions:
    def test_support_cannot_share(self, support_user):
        response = save(login(support_user), shared=True)
        assert response.status_code == 403
        assert "operator role" in response.content.decode()
        assert SavedView.objects.count() == 0

    def test_audit_log_views_need_the_admin_role(self, operator_user, admin_user):
        assert save(login(operator_user), kind="audit", query="actor=olga").status_code == 403
        assert (
            save(login(admin_user), kind="audit", query="actor=olga", shared=True).status_code
            == 302
        )
        # A shared audit-log view stays invisible to those who cannot open the audit log.
        assert login(operator_user).get("/api/v1/saved-views/").json() == []

    def test_shared_views_are_deleted_by_their_owner_or_an_admin_only(
        self, support_user, operator_user, admin_user, django_user_model
    ):
        save(login(operator_user), name="Shared", shared=True)
        view = SavedView.objects.get()
        support = login(support_user)
        assert support.post(f"/views/{view.pk}/delete/").status_code == 403
        other_operator = django_user_model.objects.create_user("otto-operator", password="x")
        other_operator.groups.add(Group.objects.get_or_create(name=roles.OPERATOR)[0])
        assert login(other_operator).post(f"/views/{view.pk}/delete/").status_code == 403
        assert SavedView.objects.filter(pk=view.pk).exists()
        assert login(admin_user).post(f"/views/{view.pk}/delete/").status_code == 302
        assert not SavedView.objects.filter(pk=view.pk).exists()
        deleted = AuditEntry.objects.get(action="saved_view.delete")
        assert deleted.object_id == str(view.pk) and deleted.actor == admin_user.username

    def test_a_private_view_is_its_owners(self, support_user, operator_user):
        save(login(support_user), name="Mine")
        view = SavedView.objects.get()
        # Another user (even an operator) neither sees nor deletes it.
        assert login(operator_user).post(f"/views/{view.pk}/delete/").status_code == 404
        assert login(support_user).post(f"/views/{view.pk}/delete/").status_code == 302
        assert not SavedView.objects.exists()
        assert not AuditEntry.objects.filter(object_kind="saved_view").exists()

    def test_anonymous_gets_nothing(self):
        client = Client()
        assert client.get("/views/").status_code in (302, 403)
        assert client.get("/api/v1/saved-views/").status_code in (401, 403)


class TestApi:
    def test_view_param_applies_the_saved_filter(self, support_user, operator_user):
        failed = make_task("failed")
        make_task("completed")
        save(login(operator_user), name="Failed", query="status=failed", shared=True)
        view = SavedView.objects.get()
        client = login(support_user)
        listed = client.get("/api/v1/saved-views/?kind=tasks").json()
        assert [(v["id"], v["query"], v["shared"]) for v in listed] == [
            (view.pk, "status=failed", True)
        ]
        ids = [t["task_id"] for t in client.get(f"/api/v1/tasks/?view={view.pk}").json()["results"]]
        assert ids == [failed.task_id]
        # Parameters given beside it win over the saved ones.
        answer = client.get(f"/api/v1/tasks/?view={view.pk}&status=completed").json()
        assert [t["status"] for t in answer["results"]] == ["completed"]

    def test_view_of_another_list_or_unknown_is_a_400(self, support_user):
        make_operation("running")
        client = login(support_user)
        save(client, name="Tasks", query="status=failed")
        view = SavedView.objects.get()
        answer = client.get(f"/api/v1/operations/?view={view.pk}")
        assert answer.status_code == 400 and "view" in answer.json()
        assert client.get("/api/v1/tasks/?view=999999").status_code == 400
        assert client.get("/api/v1/tasks/?view=abc").status_code == 400

    def test_someone_elses_private_view_is_not_applied(self, support_user, operator_user):
        save(login(operator_user), name="Private", query="status=failed")
        view = SavedView.objects.get()
        assert login(support_user).get(f"/api/v1/tasks/?view={view.pk}").status_code == 400
