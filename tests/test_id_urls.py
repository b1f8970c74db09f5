"""Ids can't redirect actions: every URL built from an id percent-encodes it as one
path segment, and every route reaches every storable id (issue #13, point 1).

Each hostile id goes end to end through Django's test client: ingest -> the list
row's link -> the detail page -> its cancel form (the page's and the htmx inline
row's) -> the request reaches *that* task (its audit entry names it), never a
decoy whose id is a prefix of it. The REST detail and cancel endpoints too.
"""

from __future__ import annotations

import html
import json
import re
from urllib.parse import quote

import pytest
from django.contrib.auth.models import Group
from django.template import Context, Template
from rest_framework.test import APIClient

from beeos_console.auditlog.models import AuditEntry
from beeos_console.core import tokens
from beeos_console.core.links import id_segment, object_url
from operations.models import RuntimeOperation
from tasks.models import Task

from .factories import make_message, make_operation, make_task, openapi_task

pytestmark = pytest.mark.django_db

HOSTILE_IDS = [
    "a/b",
    "a%2Fb",
    "tsk#frag",
    "tsk?x=1",
    "名前/x",
    "a b",
    "x/cancel",  # its detail URL reads as the cancel URL of "x"
    "x/cancel/cancel",
    "a/",
    "/a",
    "a.json",
    "a;b=c&d",
    "%",
    "l/" + "ü" * 100 + "/" + "z" * 150,  # 254 characters, multi-byte
]
# Ids a hostile id could reach instead, if a URL let its characters act.
DECOYS = ["a", "x", "tsk", "名前", "l", "b"]


@pytest.fixture
def operator(client, operator_user):
    client.force_login(operator_user)
    return client


@pytest.fixture
def support(client, support_user):
    client.force_login(support_user)
    return client


def api_for(django_user_model, username: str, role: str) -> APIClient:
    user = django_user_model.objects.create_user(username)
    user.groups.add(Group.objects.get_or_create(name=role)[0])
    _, key = tokens.issue(user, "test")
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    return api


def ingest_task(api: APIClient, task_id: str) -> None:
    body = {"records": [{"kind": "openapi_task", "data": openapi_task(task_id=task_id)}]}
    response = api.post("/api/v1/ingest/", data=json.dumps(body), content_type="application/json")
    assert response.json()["results"][0]["result"] == "created", response.json()


def decoys(*, skip: str) -> None:
    for decoy in DECOYS:
        if decoy != skip:
            make_task("running", task_id=decoy)


def only_cancelled(task_id: str) -> None:
    """The cancel reached ``task_id`` and nothing else."""
    entries = list(AuditEntry.objects.filter(action="task.cancel"))
    assert [e.object_id for e in entries] == [task_id]
    assert Task.objects.get(task_id=task_id).raw_state == "canceled"
    assert not Task.objects.exclude(task_id=task_id).filter(raw_state="canceled").exists()


def attr(markup: str, pattern: str) -> str:
    return html.unescape(re.search(pattern, markup).group(1))


def list_row(client, task: Task) -> str:
    page = client.get("/tasks/?sort=created").content.decode()
    return re.search(rf'<tr id="task-row-{task.pk}".*?</tr>', page, re.S).group(0)


class TestTheHelper:
    @pytest.mark.parametrize("object_id", HOSTILE_IDS)
    def test_the_id_is_one_segment(self, object_id):
        url = object_url("tasks:detail", object_id, protocol="openapi")
        assert url == f"/tasks/{quote(object_id, safe='')}/?protocol=openapi"
        path = url.removeprefix("/tasks/").removesuffix("/?protocol=openapi")
        assert "/" not in path and "?" not in path and "#" not in path
        assert object_url("operations:cancel", object_id).endswith(
            f"{id_segment(object_id)}/cancel/"
        )

    def test_the_template_tag_escapes_and_encodes(self):
        out = Template(
            "{% load console %}{% object_url 'tasks:cancel' i protocol='a2a' row=1 %}"
        ).render(Context({"i": 'a/"b'}))
        assert out == "/tasks/a%2F%22b/cancel/?protocol=a2a&amp;row=1"

    def test_query_values_are_encoded_and_none_left_out(self):
        assert object_url("tasks:detail", "t", protocol=None) == "/tasks/t/"
        assert object_url("tasks:detail", "t", q="a&b=c") == "/tasks/t/?q=a%26b%3Dc"


@pytest.mark.parametrize("task_id", HOSTILE_IDS)
def test_list_link_detail_page_and_its_cancel_form_reach_that_task(
    operator, django_user_model, task_id
):
    decoys(skip=task_id)
    ingest_task(api_for(django_user_model, "feeder-x", "feeder"), task_id)
    task = Task.objects.get(task_id=task_id)
    href = attr(list_row(operator, task), r'<td><a href="([^"]+)" title="[^"]*"><code')
    assert href == f"/tasks/{id_segment(task_id)}/?protocol=openapi"
    page = operator.get(href)
    assert page.status_code == 200
    assert page.context["task"].pk == task.pk
    markup = page.content.decode()
    action = attr(
        markup, r'<form method="post" action="([^"]+)"\s+hx-post="[^"]+"\s+hx-target="#cancel-area"'
    )
    assert action == f"/tasks/{id_segment(task_id)}/cancel/?protocol=openapi"
    response = operator.post(action, {"reason": "hostile id", "idempotency_key": "k-1"})
    assert response.status_code == 302
    assert response.headers["Location"] == href  # back to this task's page
    only_cancelled(task_id)


@pytest.mark.parametrize("task_id", HOSTILE_IDS)
def test_the_htmx_inline_row_cancel_reaches_that_task(operator, task_id):
    decoys(skip=task_id)
    task = make_task("running", task_id=task_id)
    row = list_row(operator, task)
    hx_get = attr(row, r'hx-get="([^"]+)"[^>]*>Cancel…</a>')
    assert hx_get == f"/tasks/{id_segment(task_id)}/cancel/?protocol=openapi&row=1"
    confirm = operator.get(hx_get, HTTP_HX_REQUEST="true")
    assert confirm.status_code == 200
    form = confirm.content.decode()
    hx_post = attr(form, r'hx-post="([^"]+)"')
    assert hx_post == f"/tasks/{id_segment(task_id)}/cancel/?protocol=openapi&row=1"
    done = operator.post(
        hx_post, {"reason": "hostile id", "idempotency_key": "k-2"}, HTTP_HX_REQUEST="true"
    )
    assert done.status_code == 200
    assert f'id="task-row-{task.pk}"' in done.content.decode()  # that row redrawn
    only_cancelled(task_id)


@pytest.mark.parametrize("operation_id", HOSTILE_IDS)
def test_operation_link_page_and_cancel_form_reach_that_operation(operator, operation_id):
    for decoy in DECOYS:
        if decoy != operation_id:
            make_operation("running", id=decoy)
    op = make_operation("running", id=operation_id)
    listing = operator.get("/operations/").content.decode()
    segment = id_segment(operation_id)
    assert f'href="/operations/{html.escape(segment)}/"' in listing
    page = operator.get(f"/operations/{segment}/")
    assert page.status_code == 200 and page.context["op"].pk == op.pk
    action = attr(page.content.decode(), r'<form method="post" action="(/operations/[^"]+)"')
    assert action == f"/operations/{segment}/cancel/"
    response = operator.post(action, {"reason": "hostile id", "idempotency_key": "k-3"})
    assert response.status_code == 302 and response.headers["Location"] == f"/operations/{segment}/"
    entries = AuditEntry.objects.filter(action="operation.cancel")
    assert [e.object_id for e in entries] == [operation_id]
    assert RuntimeOperation.objects.get(pk=op.pk).raw_status == "cancelled"
    assert not RuntimeOperation.objects.exclude(pk=op.pk).filter(raw_status="cancelled").exists()


class TestAnIdEndingInCancel:
    """``/tasks/x%2Fcancel/`` reaches the server as ``/tasks/x/cancel/``."""

    def test_a_get_shows_that_task_and_a_post_still_cancels_x(self, operator):
        x = make_task("running", task_id="x")
        tail = make_task("running", task_id="x/cancel")
        page = operator.get("/tasks/x%2Fcancel/?protocol=openapi")
        assert page.status_code == 200 and page.context["task"].pk == tail.pk
        # Without a protocol too (the same rule as the detail page).
        assert operator.get("/tasks/x%2Fcancel/").context["task"].pk == tail.pk
        # The htmx inline row and a POST are the cancel of "x".
        row = operator.get("/tasks/x/cancel/?protocol=openapi&row=1", HTTP_HX_REQUEST="true")
        assert row.context["task"].pk == x.pk
        operator.post("/tasks/x/cancel/?protocol=openapi", {"reason": "r", "idempotency_key": "k"})
        only_cancelled("x")

    def test_without_such_a_task_a_get_still_redirects_to_x(self, operator):
        make_task("running", task_id="x")
        response = operator.get("/tasks/x/cancel/?protocol=openapi")
        assert response.status_code == 302
        assert response.headers["Location"] == "/tasks/x/?protocol=openapi#cancel"

    def test_support_sees_the_page_but_cannot_cancel(self, support):
        make_task("running", task_id="x")
        make_task("running", task_id="x/cancel")
        assert support.get("/tasks/x%2Fcancel/?protocol=openapi").status_code == 200
        response = support.post("/tasks/x/cancel/?protocol=openapi", {"reason": "r"})
        assert response.status_code == 403

    def test_operations_too(self, support):
        make_operation("running", id="x")
        tail = make_operation("running", id="x/cancel")
        page = support.get("/operations/x%2Fcancel/")
        assert page.status_code == 200 and page.context["op"].pk == tail.pk
        assert support.get("/operations/y/cancel/").status_code == 405


class TestTheApi:
    @pytest.fixture
    def api(self, django_user_model) -> APIClient:
        return api_for(django_user_model, "api-operator", "operator")

    @pytest.mark.parametrize("task_id", HOSTILE_IDS)
    def test_detail_and_cancel_reach_every_storable_id(self, api, task_id):
        decoys(skip=task_id)
        make_task("running", task_id=task_id)
        segment = id_segment(task_id)
        detail = api.get(f"/api/v1/tasks/{segment}/")
        assert detail.status_code == 200, detail.content
        assert detail.json()["task_id"] == task_id
        answer = api.post(f"/api/v1/tasks/{segment}/cancel", {"reason": "r"}, format="json")
        assert answer.status_code == 200, answer.content
        only_cancelled(task_id)

    @pytest.mark.parametrize("operation_id", HOSTILE_IDS)
    def test_operations_detail_and_cancel(self, api, operation_id):
        make_operation("running", id="x")
        make_operation("running", id="a")
        op = make_operation("running", id=operation_id)
        segment = id_segment(operation_id)
        assert api.get(f"/api/v1/operations/{segment}/").json()["operation_id"] == operation_id
        answer = api.post(f"/api/v1/operations/{segment}/cancel/", {"reason": "r"}, format="json")
        assert answer.status_code == 200, answer.content
        assert [e.object_id for e in AuditEntry.objects.filter(action="operation.cancel")] == [
            operation_id
        ]
        assert RuntimeOperation.objects.get(pk=op.pk).raw_status == "cancelled"

    def test_an_id_ending_in_cancel(self, api, django_user_model):
        make_task("running", task_id="x")
        make_task("running", task_id="x/cancel")
        # GET is the task "x/cancel", for support too; POST cancels "x".
        support = api_for(django_user_model, "api-support", "support")
        for client in (api, support):
            for url in ("/api/v1/tasks/x%2Fcancel", "/api/v1/tasks/x%2Fcancel/"):
                assert client.get(url).json()["task_id"] == "x/cancel"
        assert support.post("/api/v1/tasks/x/cancel", {"reason": "r"}).status_code == 403
        assert api.post("/api/v1/tasks/x/cancel", {"reason": "r"}, format="json").status_code == 200
        only_cancelled("x")
        assert api.get("/api/v1/tasks/nobody%2Fcancel").status_code == 404

    def test_messages_with_slashes(self, support):
        make_message(make_task("running"), id="msg/with/slash")
        answer = support.get(f"/api/v1/messages/{id_segment('msg/with/slash')}/")
        assert answer.status_code == 200 and answer.json()["message_id"] == "msg/with/slash"

    def test_the_schema_documents_cancel_as_post_only(self, support):
        schema = support.get("/api/schema/", HTTP_ACCEPT="application/json").json()
        cancel = schema["paths"]["/api/v1/tasks/{task_id}/cancel/"]
        assert set(cancel) == {"post"}


def test_dashboard_links_encode_the_id(support):
    make_operation("outcome_unknown", effectState="outcome_unknown", id="op/y?x")
    assert 'href="/operations/op%2Fy%3Fx/"' in support.get("/").content.decode()


def test_audit_log_links_encode_the_id(client, admin_user, operator_user):
    make_task("running", task_id="a/b?c")
    client.force_login(operator_user)
    client.post("/tasks/a%2Fb%3Fc/cancel/?protocol=openapi", {"reason": "r"})
    only_cancelled("a/b?c")
    client.force_login(admin_user)
    markup = client.get("/audit/log/").content.decode()
    assert 'href="/tasks/a%2Fb%3Fc/?protocol=openapi"' in markup
