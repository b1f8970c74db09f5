"""Saved views are renamed, re-shared and take new filters: by their owner (a shared view
also by an admin), audited when the team sees the view, a page and an htmx inline form."""

from __future__ import annotations

import re
from html import unescape
from urllib.parse import parse_qs, quote

import pytest
from django.test import Client

from beeos_console.auditlog.models import AuditEntry
from beeos_console.savedviews.models import MAX_QUERY, SavedView

pytestmark = pytest.mark.django_db

HX = {"HTTP_HX_REQUEST": "true"}


def login(user, **kwargs) -> Client:
    client = Client(**kwargs)
    client.force_login(user)
    return client


def make_view(owner, name="Failing", query="status=failed", shared=False, kind="tasks"):
    return SavedView.objects.create(owner=owner, name=name, kind=kind, query=query, shared=shared)


def edit(client, view, **data):
    data.setdefault("name", view.name)
    if data.pop("shared", view.shared):
        data["shared"] = "true"
    return client.post(f"/views/{view.pk}/edit/", data)


def updates() -> list[AuditEntry]:
    return list(AuditEntry.objects.filter(action="saved_view.update").order_by("id"))


class TestRenameAndShare:
    def test_the_owner_renames_a_private_view_on_a_page_without_javascript(self, support_user):
        view = make_view(support_user)
        client = login(support_user)
        page = client.get(f"/views/{view.pk}/edit/")
        assert page.status_code == 200
        html = page.content.decode()
        assert 'value="Failing"' in html and f'action="/views/{view.pk}/edit/"' in html
        # Support may not share: no checkbox, the page says why.
        assert 'name="shared"' not in html and "only operators and admins" in html
        response = edit(client, view, name="  Failing tasks  ")
        assert response.status_code == 302 and response["Location"] == "/views/?kind=tasks"
        view.refresh_from_db()
        assert (view.name, view.query, view.shared) == ("Failing tasks", "status=failed", False)
        listed = client.get(response["Location"]).content.decode()
        assert "Saved “Failing tasks”." in listed
        # A private view's changes are its owner's business, like its creation.
        assert updates() == []

    def test_sharing_and_unsharing_are_audited_with_before_and_after(self, operator_user):
        view = make_view(operator_user)
        client = login(operator_user)
        assert edit(client, view, shared=True).status_code == 302
        assert edit(client, view, name="Team failing", shared=True).status_code == 302
        assert edit(client, view, name="Mine again", shared=False).status_code == 302
        view.refresh_from_db()
        assert (view.name, view.shared) == ("Mine again", False)
        entries = updates()
        assert [(e.before["shared"], e.after["shared"]) for e in entries] == [
            (False, True),
            (True, True),
            (True, False),
        ]
        assert entries[1].before["name"] == "Failing" and entries[1].after["name"] == "Team failing"
        assert {e.object_id for e in entries} == {str(view.pk)}
        assert {e.actor for e in entries} == {operator_user.username}

    def test_an_unchanged_save_changes_and_audits_nothing(self, operator_user):
        view = make_view(operator_user, shared=True)
        before = SavedView.objects.get(pk=view.pk).updated_at
        response = edit(login(operator_user), view, shared=True)
        assert response.status_code == 302
        assert SavedView.objects.get(pk=view.pk).updated_at == before
        assert updates() == []

    def test_support_cannot_share_its_private_view(self, support_user):
        view = make_view(support_user)
        response = edit(login(support_user), view, shared=True)
        assert response.status_code == 403 and "operator role" in response.content.decode()
        assert not SavedView.objects.get(pk=view.pk).shared

    @pytest.mark.parametrize("name", ["", "   ", "a\x00b", "x" * 101])
    def test_a_bad_name_is_a_400_that_keeps_the_view(self, support_user, name):
        view = make_view(support_user)
        response = edit(login(support_user), view, name=name)
        assert response.status_code == 400
        if "\x00" not in name:  # a NUL is refused before any view (middleware)
            assert 'aria-invalid="true"' in response.content.decode()
        assert SavedView.objects.get(pk=view.pk).name == "Failing"

    def test_csrf_is_checked(self, support_user):
        view = make_view(support_user)
        client = login(support_user, enforce_csrf_checks=True)
        assert edit(client, view, name="No token").status_code == 403
        assert SavedView.objects.get(pk=view.pk).name == "Failing"


class TestWhoMayChange:
    def test_a_shared_view_is_changed_by_its_owner_or_an_admin_only(
        self, support_user, operator_user, admin_user, django_user_model
    ):
        view = make_view(operator_user, shared=True)
        other_operator = django_user_model.objects.create_user("oscar-operator")
        other_operator.groups.add(*operator_user.groups.all())
        for user in (support_user, other_operator):
            client = login(user)
            assert client.get(f"/views/{view.pk}/edit/").status_code == 403
            response = edit(client, view, name="Hijacked", shared=True)
            assert response.status_code == 403
            assert "owner or an admin" in response.content.decode()
            listed = client.get("/views/").content.decode()
            assert f"/views/{view.pk}/edit/" not in listed
        assert SavedView.objects.get(pk=view.pk).name == "Failing"
        renamed = edit(login(admin_user), view, name="Renamed by admin", shared=True)
        assert renamed.status_code == 302
        assert SavedView.objects.get(pk=view.pk).name == "Renamed by admin"
        (entry,) = updates()
        assert entry.actor == admin_user.username
        assert entry.detail == {"kind": "tasks", "owner": operator_user.username}

    def test_someone_elses_private_view_is_not_found(self, support_user, admin_user):
        view = make_view(support_user)
        admin = login(admin_user)
        assert admin.get(f"/views/{view.pk}/edit/").status_code == 404
        assert edit(admin, view, name="Mine now").status_code == 404
        assert SavedView.objects.get(pk=view.pk).name == "Failing"
        assert login(support_user).get("/views/999999/edit/").status_code == 404


class TestReplaceTheFilters:
    def test_from_a_list_update_a_saved_view_with_the_current_filters(self, operator_user):
        view = make_view(operator_user, shared=True)
        make_view(operator_user, name="Operations view", kind="operations", query="")
        client = login(operator_user)
        results = client.get(
            "/tasks/?status=processing&stuck=60&sort=stuck&after=abc",
            HTTP_HX_REQUEST="true",
            HTTP_HX_TARGET="results",
        ).content.decode()
        link = unescape(re.search(r'class="update-view-link" href="([^"]+)"', results)[1])
        assert link.startswith("/views/?kind=tasks&query=")
        picker = client.get(link).content.decode()
        assert "Choose the view of this list to update with these filters:" in picker
        # Only the views of that list offer it.
        update = unescape(re.findall(r'<a href="(/views/\d+/edit/\?query=[^"]+)"', picker)[0])
        assert update.startswith(f"/views/{view.pk}/edit/?query=")
        assert picker.count("Update with these filters…") == 1
        form = client.get(update).content.decode()
        assert re.search(r'name="replace_query" value="true" checked', form)
        query = unescape(re.search(r'name="query" value="([^"]*)"', form)[1])
        assert parse_qs(query) == {"status": ["processing"], "stuck": ["60"], "sort": ["stuck"]}
        response = edit(client, view, shared=True, replace_query="true", query=query)
        assert response.status_code == 302
        view.refresh_from_db()
        assert parse_qs(view.query) == parse_qs(query)
        (entry,) = updates()
        assert entry.before["query"] == "status=failed" and entry.after["query"] == view.query
        opened = client.get(f"/views/{view.pk}/")
        assert parse_qs(opened["Location"].split("?", 1)[1]) == parse_qs(query)

    def test_without_the_box_ticked_the_filters_stay(self, support_user):
        view = make_view(support_user)
        edit(login(support_user), view, name="Renamed", query="status=completed")
        view.refresh_from_db()
        assert (view.name, view.query) == ("Renamed", "status=failed")

    def test_page_and_refresh_parameters_are_never_kept(self, support_user):
        view = make_view(support_user)
        edit(
            login(support_user),
            view,
            replace_query="true",
            query="status=completed&after=xyz&refresh=true&view=3",
        )
        assert SavedView.objects.get(pk=view.pk).query == "status=completed"

    def test_an_empty_filter_is_a_filter(self, support_user):
        view = make_view(support_user)
        client = login(support_user)
        form = client.get(f"/views/{view.pk}/edit/?query=").content.decode()
        assert re.search(r'name="replace_query" value="true" checked', form)
        edit(client, view, replace_query="true", query="")
        assert SavedView.objects.get(pk=view.pk).query == ""

    def test_filters_too_long_are_a_400(self, support_user):
        view = make_view(support_user)
        long = "q=" + quote("ü" * (MAX_QUERY // 2))
        response = edit(login(support_user), view, replace_query="true", query=long)
        assert response.status_code == 400
        assert SavedView.objects.get(pk=view.pk).query == "status=failed"


class TestInlineWithHtmx:
    def test_edit_swaps_the_row_for_a_form_and_back(self, operator_user):
        view = make_view(operator_user, shared=True)
        client = login(operator_user)
        listed = client.get("/views/").content.decode()
        assert f'hx-get="/views/{view.pk}/edit/" hx-target="closest tr"' in listed
        row = client.get(f"/views/{view.pk}/edit/", **HX)
        html = row.content.decode()
        assert html.startswith(f'<tr id="saved-view-{view.pk}" class="editing">')
        assert f'hx-post="/views/{view.pk}/edit/"' in html and "<html" not in html
        assert 'name="shared" value="true" checked' in html
        kept = client.get(f"/views/{view.pk}/edit/?row=1", **HX).content.decode()
        assert kept.startswith(f'<tr id="saved-view-{view.pk}">') and "Failing" in kept

        saved = client.post(f"/views/{view.pk}/edit/", {"name": "Stuck work"}, **HX)
        assert saved.status_code == 200
        html = saved.content.decode()
        assert html.startswith(f'<tr id="saved-view-{view.pk}">')
        assert "Stuck work" in html and "private" in html and 'role="status"' in html
        view.refresh_from_db()
        assert (view.name, view.shared) == ("Stuck work", False)

    def test_a_refused_edit_answers_the_form_with_its_error_in_place(self, operator_user):
        view = make_view(operator_user)
        response = login(operator_user).post(f"/views/{view.pk}/edit/", {"name": ""}, **HX)
        assert response.status_code == 400
        html = response.content.decode()
        assert html.startswith(f'<tr id="saved-view-{view.pk}" class="editing">')
        assert 'class="error"' in html


def test_the_menu_and_the_api_show_the_new_name(support_user, operator_user):
    view = make_view(operator_user, shared=True)
    edit(login(operator_user), view, name="Renamed", shared=True)
    support = login(support_user)
    assert "Renamed" in support.get("/views/?kind=tasks", **HX).content.decode()
    names = [v["name"] for v in support.get("/api/v1/saved-views/").json()]
    assert names == ["Renamed"]
