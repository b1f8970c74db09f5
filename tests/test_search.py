"""The search box (#14): ids by any fragment, pasted URLs, full text, grouped, one hit opens."""

from __future__ import annotations

import pytest

from beeos_console.core.links import object_url
from beeos_console.search.query import parse, url_target

from .factories import make_a2a_task, make_message, make_operation, make_task

pytestmark = pytest.mark.django_db


@pytest.fixture
def support(client, support_user):
    client.force_login(support_user)
    return client


# --- parsing (no database) ----------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "kind", "first_id"),
    [
        ("https://beeos.example/api/v1/agents/agt_1/tasks/tsk_9", "task", "tsk_9"),
        ("https://beeos.example/api/v1/agents/agt_1/tasks/tsk_9/messages", "task", "tsk_9"),
        ("https://b.example/api/v1/instances/ins_1/operations/op_7/events", "operation", "op_7"),
        ("https://beeos.example/api/v1/agents/agt_1/conversations/c_3/messages", "context", "c_3"),
        ("https://beeos.example/api/v1/agents/agt_1", "agent", "agt_1"),
        ("http://console.local/tasks/a%2Fb/?protocol=a2a", "task", "a/b"),
        ("http://console.local/tasks/tsk_1/cancel/", "task", "tsk_1"),
        ("/operations/op_7/", "operation", "op_7"),
        ("http://console.local/messages/?conversation=chan_1", "context", "chan_1"),
    ],
)
def test_urls_name_their_object(url, kind, first_id):
    target = url_target(url)
    assert target is not None
    assert (target.kind, target.ids[0]) == (kind, first_id)


def test_a_console_url_with_an_unencoded_slash_also_tries_the_whole_rest():
    assert url_target("http://h/tasks/a/b/").ids == ("a", "a/b")


def test_short_text_is_words_only_and_nul_is_dropped():
    assert parse("ab").fragment == ""
    assert parse("ab").words == "ab"
    assert parse(" tsk\x00_1 ").fragment == "tsk_1"


# --- ids by fragment ---------------------------------------------------------------


@pytest.mark.parametrize("part", ["start", "middle", "end"])
def test_a_fragment_anywhere_in_a_task_id_opens_the_task(support, part):
    task = make_task("failed", task_id="zqxstart-MIDDLE-endzqx")
    make_task("running")  # not matched
    fragment = {"start": "zqxstart", "middle": "middle", "end": "endzqx"}[part]
    response = support.get("/search/", {"q": fragment})
    assert response.status_code == 302
    assert response["Location"] == object_url("tasks:detail", task.task_id, protocol="openapi")


def test_a_fragment_of_an_operation_id_opens_the_operation(support):
    op = make_operation("failed", id="op_unique_7781x")
    response = support.get("/search/", {"q": "7781"})
    assert response.status_code == 302
    assert response["Location"] == object_url("operations:detail", op.operation_id)


def test_a_fragment_of_a_message_id_opens_its_task_at_the_message(support):
    task = make_task("completed")
    message = make_message(task, id="msg_needle_4455")
    response = support.get("/search/", {"q": "needle_44"})
    assert response.status_code == 302
    expected = object_url("tasks:detail", task.task_id, protocol="openapi")
    assert response["Location"] == f"{expected}#m-{message.pk}"


def test_like_wildcards_in_the_box_are_literal(support):
    make_task("running", task_id="abc_def")
    make_task("running", task_id="abcXdef")
    response = support.get("/search/", {"q": "c_d"})
    assert response.status_code == 302  # only abc_def: "_" is not a wildcard


def test_several_hits_are_grouped_by_kind(support):
    make_task("running", task_id="grp-shared-1")
    make_task("failed", task_id="grp-shared-2")
    make_operation("running", id="op-grp-shared-3")
    task = make_task("completed")
    make_message(task, id="m-grp-shared-4")
    make_a2a_task(contextId="ctx-grp-shared-5")
    response = support.get("/search/", {"q": "grp-shared"})
    assert response.status_code == 200
    html = response.content.decode()
    for label in ("Tasks", "Operations", "Messages", "Contexts"):
        assert f"<h2>{label} " in html
    for ident in ("grp-shared-1", "grp-shared-2", "op-grp-shared-3", "m-grp-shared-4"):
        assert ident in html
    assert 'data-kind="contexts"' in html and "ctx-grp-shared-5" in html
    # Grouped: the tasks section comes before the operations section.
    assert html.index('data-kind="tasks"') < html.index('data-kind="operations"')


def test_a_whole_id_opens_that_object_even_when_it_is_part_of_others(support):
    task = make_task("running", task_id="dup-7")
    make_task("running", task_id="dup-77", minutes_ago=0)
    response = support.get("/search/", {"q": "dup-7"})
    assert response.status_code == 302
    assert response["Location"] == object_url("tasks:detail", task.task_id, protocol="openapi")
    # A fragment of both lists both.
    html = support.get("/search/", {"q": "dup-"}).content.decode()
    assert "<code>dup-7</code>" in html and "<code>dup-77</code>" in html


def test_an_id_shared_by_a_task_and_an_operation_lists_both(support):
    make_task("running", task_id="same-id-1")
    make_operation("running", id="same-id-1")
    response = support.get("/search/", {"q": "same-id-1"})
    assert response.status_code == 200
    html = response.content.decode()
    assert 'data-kind="tasks"' in html and 'data-kind="operations"' in html


def test_nothing_found_says_so(support):
    response = support.get("/search/", {"q": "no-such-thing-anywhere"})
    assert response.status_code == 200
    assert "Nothing matches" in response.content.decode()


# --- pasted URLs ---------------------------------------------------------------------


def test_a_pasted_console_url_opens_the_task(support):
    task = make_task("running", task_id="tsk/with slash")
    url = "http://console.example" + object_url("tasks:detail", task.task_id, protocol="openapi")
    response = support.get("/search/", {"q": url})
    assert response.status_code == 302
    assert response["Location"] == object_url("tasks:detail", task.task_id, protocol="openapi")


def test_a_pasted_beeos_task_url_opens_the_task(support):
    task = make_task("running", task_id="tsk_beeos_url_1")
    url = f"https://api.beeos.example/api/v1/agents/{task.agent_id}/tasks/{task.task_id}/messages"
    response = support.get("/search/", {"q": url})
    assert response.status_code == 302
    assert response["Location"].startswith(object_url("tasks:detail", task.task_id))


def test_a_pasted_beeos_operation_url_opens_the_operation(support):
    op = make_operation("running", id="op_beeos_url_1")
    url = f"https://api.beeos.example/api/v1/instances/ins_store118/operations/{op.operation_id}"
    response = support.get("/search/", {"q": url})
    assert response.status_code == 302
    assert response["Location"] == object_url("operations:detail", op.operation_id)


def test_a_url_naming_an_unknown_object_says_so(support):
    response = support.get("/search/", {"q": "https://x/api/v1/agents/a/tasks/tsk_none"})
    assert response.status_code == 200
    assert "No mirrored task" in response.content.decode()


# --- full text -------------------------------------------------------------------------


def test_full_text_finds_a_word_in_a_message_body_and_highlights_it(support):
    task = make_task("completed")
    make_message(task, body="The parcel was rerouted to the Lisbon warehouse yesterday.")
    make_message(task, body="Nothing about cities here.")
    response = support.get("/search/", {"q": "lisbon"})
    assert response.status_code == 200  # a text match is shown, not jumped to
    html = response.content.decode()
    assert "Message text" in html
    assert "<mark>Lisbon</mark> warehouse" in html
    assert "Nothing about cities" not in html


def test_a_hostile_body_stays_escaped_around_the_highlight(support):
    task = make_task("completed")
    body = '<script>alert("x")</script> hostile <b>bold</b> if 1 < 2 & 3 > "2" payload'
    make_message(task, body=body)
    html = support.get("/search/", {"q": "hostile payload"}).content.decode()
    assert "<script" not in html.split("<main", 1)[1]
    assert "<b>bold</b>" not in html
    assert "<mark>hostile</mark>" in html and "<mark>payload</mark>" in html
    assert "1 &lt; 2 &amp; 3 &gt; &quot;2&quot;" in html


def test_the_highlight_escapes_everything_but_its_own_marks():
    from beeos_console.search.selectors import START, STOP, highlight

    text = f"<script>x</script> {START}<img src=x onerror=alert(1)>{STOP} {START}open"
    html = str(highlight(text))
    assert html == (
        "&lt;script&gt;x&lt;/script&gt; <mark>&lt;img src=x onerror=alert(1)&gt;</mark> open"
    )


def test_full_text_over_task_and_operation_errors(support):
    make_task("failed", error="upstream quota exhausted for tenant")
    make_operation(
        "failed",
        error={"code": "runtime_unavailable", "message": "quota exhausted on node"},
    )
    html = support.get("/search/", {"q": "quota exhausted"}).content.decode()
    assert "Task errors" in html and "Operation errors" in html
    assert html.count("<mark>quota</mark> <mark>exhausted</mark>") == 2


# --- the API, the dropdown, roles -------------------------------------------------------


def test_the_api_returns_json_groups_and_the_one_hit(client, support_user):
    client.force_login(support_user)
    task = make_task("running", task_id="api-search-one")
    data = client.get("/api/v1/search/", {"q": "search-one"}).json()
    assert data["redirect"] == object_url("tasks:detail", task.task_id, protocol="openapi")
    assert [g["kind"] for g in data["groups"]] == ["tasks"]
    assert data["groups"][0]["hits"][0]["id"] == "api-search-one"


def test_the_htmx_dropdown_lists_without_redirecting(support):
    make_task("running", task_id="drop-down-1")
    response = support.get("/search/", {"q": "down-1"}, HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    assert "drop-down-1" in response.content.decode()
    assert "<html" not in response.content.decode()


def test_every_page_has_the_search_box(support):
    html = support.get("/tasks/").content.decode()
    assert 'id="console-search"' in html and 'action="/search/"' in html


def test_search_needs_the_support_role(client, django_user_model):
    nobody = django_user_model.objects.create_user(username="no-role", password="pw-no-role")
    client.force_login(nobody)
    assert client.get("/search/", {"q": "tsk"}).status_code == 403
    assert client.get("/api/v1/search/", {"q": "tsk"}).status_code == 403
    client.logout()
    assert client.get("/search/", {"q": "tsk"}).status_code in (302, 403)


def test_words_too_broad_to_sort_in_time_say_so(support, monkeypatch):
    from django.db import OperationalError

    from beeos_console.search import selectors

    def timed_out(*args, **kwargs):
        raise OperationalError("canceling statement due to statement timeout")

    monkeypatch.setattr(selectors, "_by_words", timed_out)
    make_task("running", task_id="broad-1")
    make_task("running", task_id="broad-2")
    response = support.get("/search/", {"q": "broad"})
    assert response.status_code == 200
    html = response.content.decode()
    assert "too many rows" in html and "broad-1" in html  # the id hits are still shown
