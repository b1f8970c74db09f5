"""The operator UI as a user meets it: filters in the URL, keyset pages, detail pages."""

from __future__ import annotations

import datetime as dt
import re

import pytest
from django.contrib.auth.models import Group
from django.urls import reverse
from django.utils import timezone

from beeos_console.auditlog.services import Actor
from beeos_console.core import pagination, roles
from tasks.services.write import ingest_openapi_task

from .factories import (
    make_a2a_task,
    make_event,
    make_message,
    make_operation,
    make_task,
    openapi_task,
)

pytestmark = pytest.mark.django_db


def task_ids(response) -> list[str]:
    return re.findall(r'href="/tasks/([^/"]+)/\?protocol=', response.content.decode())


@pytest.fixture
def support(client, support_user):
    client.force_login(support_user)
    return client


class TestTaskList:
    def test_several_statuses_at_once(self, support):
        failed = make_task("failed")
        cancelled = make_task("canceled")
        make_task("running")
        response = support.get("/tasks/?status=failed&status=cancelled")
        assert response.status_code == 200
        assert set(task_ids(response)) == {failed.task_id, cancelled.task_id}

    @pytest.mark.parametrize(
        ("query", "expected"),
        [
            ("protocol=a2a", {"a2a"}),
            ("raw_state=timeout", {"timeout"}),
            ("reason=rejected", {"rejected"}),
            ("outcome_certainty=uncertain", {"timeout"}),
            ("retry_policy=safe_to_retry", {"rejected"}),
        ],
    )
    def test_each_filter(self, support, query, expected):
        by_name = {
            "timeout": make_task("timeout"),
            "rejected": make_task("rejected"),
            "running": make_task("running"),
            "a2a": make_a2a_task(),
        }
        response = support.get(f"/tasks/?{query}")
        assert set(task_ids(response)) == {by_name[name].task_id for name in expected}

    def test_agent_and_prefix_search(self, support):
        mine = make_task(agent_id="agt_kyc_checker")
        make_task(agent_id="agt_other")
        assert task_ids(support.get("/tasks/?agent_id=agt_kyc_checker")) == [mine.task_id]
        assert task_ids(support.get(f"/tasks/?q={mine.task_id[:10]}")) == [mine.task_id]

    def test_created_range(self, support):
        now = timezone.now()
        old = make_task(now=now, minutes_ago=600)
        new = make_task(now=now, minutes_ago=5)
        since = (now - dt.timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M")
        assert task_ids(support.get(f"/tasks/?created_after={since}")) == [new.task_id]
        assert task_ids(support.get(f"/tasks/?created_before={since}")) == [old.task_id]

    def test_stuck_means_non_terminal_and_quiet_for_n_minutes(self, support):
        now = timezone.now()
        stuck = make_task("running", now=now, minutes_ago=240)
        make_task("running", now=now, minutes_ago=2)
        make_task("completed", now=now, minutes_ago=240)
        assert task_ids(support.get("/tasks/?stuck=60")) == [stuck.task_id]

    def test_sort_by_updated(self, support):
        first = make_task(minutes_ago=30)
        second = make_task(minutes_ago=20)
        touched = openapi_task("completed", minutes_ago=30, task_id=first.task_id)
        touched["updated_at"] = "2026-11-30T09:00:00Z"
        ingest_openapi_task(touched, actor=Actor.system())
        assert task_ids(support.get("/tasks/?sort=created")) == [second.task_id, first.task_id]
        assert task_ids(support.get("/tasks/?sort=updated")) == [first.task_id, second.task_id]

    def test_bad_filter_value_is_a_clear_400(self, support):
        make_task()
        response = support.get("/tasks/?status=exploded&stuck=soon")
        assert response.status_code == 400
        html = response.content.decode()
        assert "These filters could not be applied" in html
        assert "exploded" in html
        assert task_ids(response) == []

    def test_every_active_filter_has_a_one_click_removal(self, support):
        make_task("failed")
        html = support.get("/tasks/?status=failed&status=cancelled&protocol=openapi").content
        html = html.decode()
        assert 'href="/tasks/?status=cancelled&amp;protocol=openapi"' in html
        assert 'href="/tasks/?status=failed&amp;protocol=openapi"' in html
        assert 'href="/tasks/?status=failed&amp;status=cancelled"' in html

    def test_htmx_gets_only_the_results_fragment(self, support):
        make_task("failed")
        response = support.get(
            "/tasks/?status=failed", HTTP_HX_REQUEST="true", HTTP_HX_TARGET="results"
        )
        html = response.content.decode()
        assert "<html" not in html
        assert "<table" in html
        assert "HX-Request" in response["Vary"]

    def test_auto_refresh_polls_the_same_url(self, support):
        html = support.get("/tasks/?status=processing&refresh=true").content.decode()
        assert 'hx-trigger="every 15s"' in html
        assert 'hx-get="/tasks/?status=processing&amp;refresh=true"' in html


class TestKeysetPages:
    def test_pages_walk_forward_and_back_without_overlap(self, support):
        made = [make_task(minutes_ago=i) for i in range(120)]
        first = support.get("/tasks/")
        page1 = task_ids(first)
        assert len(page1) == 50
        older = re.search(r'href="(/tasks/\?after=[^"]+)"', first.content.decode()).group(1)
        second = support.get(older.replace("&amp;", "&"))
        page2 = task_ids(second)
        newer = re.search(r'href="(/tasks/\?before=[^"]+)"', second.content.decode()).group(1)
        back = task_ids(support.get(newer.replace("&amp;", "&")))
        assert back == page1
        assert not set(page1) & set(page2)
        newest_first = [t.task_id for t in made]
        assert page1 + page2 == newest_first[:100]

    def test_a_mangled_cursor_is_a_400_showing_the_first_page_with_a_note(self, support):
        task = make_task()
        response = support.get("/tasks/?after=not-a-cursor")
        assert response.status_code == 400
        assert task.task_id in response.content.decode()
        assert "not valid any more" in response.content.decode()

    def test_matching_count_is_capped(self, support, settings):
        from beeos_console.core import pagination

        for i in range(5):
            make_task(minutes_ago=i)
        original = pagination.CAPPED_COUNT
        pagination.CAPPED_COUNT = 3
        try:
            html = support.get("/tasks/").content.decode()
        finally:
            pagination.CAPPED_COUNT = original
        assert "3+ matching" in html

    def test_every_page_counts_every_matching_row(self, support):
        """The count rides with the page query: the same figure on the first page, an
        older one, a newer one, a page past the last row, and for no match at all."""
        for i in range(60):
            make_task("failed" if i % 2 else "completed", minutes_ago=i)

        def matching(response) -> str:
            return re.search(r'class="matching">([^<]+)<', response.content.decode()).group(1)

        first = support.get("/tasks/?status=failed")
        assert matching(first) == "30 matching" and len(task_ids(first)) == 30
        everything = support.get("/tasks/")
        assert matching(everything) == "60 matching"
        older = re.search(r'href="(/tasks/\?after=[^"]+)"', everything.content.decode()).group(1)
        second = support.get(older.replace("&amp;", "&"))
        assert matching(second) == "60 matching" and len(task_ids(second)) == 10
        newer = re.search(r'href="(/tasks/\?before=[^"]+)"', second.content.decode()).group(1)
        assert matching(support.get(newer.replace("&amp;", "&"))) == "60 matching"
        # Past the last row (a cursor older than everything): no row, the count still right.
        last = pagination.encode_cursor(timezone.now() - dt.timedelta(days=30), 1)
        past = support.get(f"/tasks/?after={last}")
        assert task_ids(past) == [] and matching(past) == "60 matching"
        assert matching(support.get("/tasks/?status=queued")) == "0 matching"
        assert matching(support.get("/tasks/?stuck=0")) == "0 matching"  # a 400: no rows


class TestTaskDetail:
    def test_projection_raw_state_and_rule_in_words(self, support):
        task = make_task("timeout", error="deadline passed")
        html = support.get(f"/tasks/{task.task_id}/").content.decode()
        assert '<code class="raw">timeout</code>' in html
        # Issue #14: support staff read words; the rule syntax is for admins only.
        assert "Timed out: the command may have reached the agent or device" in html
        assert "Manual review: check with the agent&#x27;s owner" in html
        assert "`" not in html and "openapi:timeout" not in html
        assert "retry policy: manual_review" in html
        assert "may already have reached the agent or device" in html
        assert "deadline passed" in html

    def test_no_uncertain_banner_when_certain(self, support):
        task = make_task("completed")
        html = support.get(f"/tasks/{task.task_id}/").content.decode()
        assert "may already have reached" not in html

    def test_timeline_marks_the_deciding_agent_reply(self, support):
        task = make_task("completed")
        make_message(task, type="chat_message", body="Please do it")
        reply = make_message(task, body="All done")
        html = support.get(f"/tasks/{task.task_id}/").content.decode()
        deciding = re.search(r'<li class="message deciding" id="m-(\d+)">', html)
        assert deciding and int(deciding.group(1)) == reply.pk
        assert "Decided the task" in html
        assert html.index("Please do it") < html.index("All done")

    def test_long_timeline_is_capped_with_load_earlier(self, support):
        task = make_task("running")
        for i in range(105):
            make_message(task, body=f"chunk {i:03d}", state="streaming", stop_reason=None)
        html = support.get(f"/tasks/{task.task_id}/").content.decode()
        assert "chunk 104" in html and "chunk 004" not in html
        earlier = re.search(r'href="\?protocol=openapi&amp;before=([^"]+)"', html).group(1)
        older = support.get(f"/tasks/{task.task_id}/?protocol=openapi&before={earlier}")
        assert "chunk 004" in older.content.decode()

    @pytest.mark.parametrize(
        "hostile",
        ['<script>alert("x")</script>', '<img src=x onerror="alert(1)">'],
    )
    def test_agent_output_is_escaped_everywhere(self, support, hostile):
        task = make_task("failed", error=hostile, metadata={"note": hostile})
        make_message(task, body=hostile, parts=[{"type": "custom", "text": hostile}])
        for url in (f"/tasks/{task.task_id}/", "/messages/"):
            html = support.get(url).content.decode()
            assert hostile not in html
            assert "&lt;" in html

    def test_unknown_task_is_404(self, support):
        assert support.get("/tasks/tsk_nope/").status_code == 404

    def test_same_id_in_two_protocols_asks_which(self, support):
        make_task(task_id="shared-id-1")
        make_a2a_task(id="shared-id-1")
        response = support.get("/tasks/shared-id-1/")
        assert "Several tasks have the id" in response.content.decode()
        one = support.get("/tasks/shared-id-1/?protocol=a2a")
        assert "TASK_STATE_WORKING" in one.content.decode()

    def test_the_wire_spelling_is_shown_when_the_producer_wrote_another(self, support):
        task = make_task("cancelled")
        html = support.get(f"/tasks/{task.task_id}/").content.decode()
        assert "on the wire: <code>canceled</code>" in html
        assert "Producer note" in html

    def test_unmapped_state_is_explained(self, support):
        task = make_task("paused_by_ops")
        html = support.get(f"/tasks/{task.task_id}/").content.decode()
        assert "Unmapped state." in html and "paused_by_ops" in html

    def test_audit_trail_shows_status_changes(self, support):
        task = make_task("running")
        ingest_openapi_task(
            openapi_task("completed", task_id=task.task_id, updated_at="2026-11-30T09:00:00Z"),
            actor=Actor.feeder("sync"),
        )
        html = support.get(f"/tasks/{task.task_id}/").content.decode()
        assert "task.state_changed" in html and "sync" in html


class TestOperations:
    def test_filters(self, support):
        unknown = make_operation("outcome_unknown")
        make_operation("running")
        blocked = make_operation(
            "projection_blocked", projection={"revision": "4", "state": "blocked"}
        )
        html = support.get("/operations/?raw_status=outcome_unknown").content.decode()
        assert unknown.operation_id in html and blocked.operation_id not in html
        html = support.get("/operations/?projection_state=blocked").content.decode()
        assert blocked.operation_id in html and unknown.operation_id not in html
        html = support.get("/operations/?status=failed&retry_policy=manual_review").content
        assert unknown.operation_id in html.decode()

    @pytest.mark.parametrize(
        "query",
        [
            "effect_state=committed",
            "error_code=INSTANCE_OFFLINE",
            "retry_mode=resubmit",
            "capability=conversation.control",
            "method=session/set_model",
            "instance_id=ins_store118",
            "target_scope=agent",
        ],
    )
    def test_every_operation_filter_is_accepted(self, support, query):
        make_operation("running")
        assert support.get(f"/operations/?{query}").status_code == 200

    def test_list_rows_show_every_internal_value(self, support):
        op = make_operation(
            "failed",
            effectState="failed",
            error={"code": "INSTANCE_OFFLINE", "message": "gone", "retryMode": "resubmit"},
        )
        html = support.get("/operations/").content.decode()
        row = re.search(rf"<tr><td>[^\n]*?{op.operation_id[:21]}.*?</tr>", html).group(0)
        for text in (
            "badge-red",  # failed, in words and colour
            '<code class="raw">failed</code>',  # raw status and effectState
            "INSTANCE_OFFLINE",
            "resubmit",
            op.method,
            f"?instance_id={op.instance_id}",
        ):
            assert text in row, text
        assert f'<time datetime="{op.created_at.isoformat()}"' in row

    @pytest.mark.parametrize(
        "odd_id",
        ["op_\"<b>bold</b>&'x", "op_with/slash?and#hash%25", "op_é" + "✓" * 30],
    )
    def test_odd_ids_are_escaped_and_still_link_to_their_page(self, support, odd_id):
        make_operation("running", id=odd_id, instanceId="<ins>")
        html = support.get("/operations/").content.decode()
        assert "<b>bold" not in html and "<ins>" not in html
        href = re.search(r'<td><a href="(/operations/[^"]+)" title="[^"]*"><code', html).group(1)
        detail = support.get(href.replace("&amp;", "&").replace("&#x27;", "'"))
        assert detail.status_code == 200
        assert detail.context["op"].operation_id == odd_id

    def test_long_ids_are_shortened_on_the_list_only(self, support):
        op = make_operation("running", id="op_" + "x" * 40)
        html = support.get("/operations/").content.decode()
        # Issue #14: a middle ellipsis, the full id on hover.
        assert f'title="{op.operation_id}"><code class="id">op_{"x" * 8}…{"x" * 10}</code>' in html
        assert f'href="/operations/{op.operation_id}/"' in html

    def test_checkboxes_only_for_operators_and_cancellable_rows(
        self, client, support_user, operator_user
    ):
        running = make_operation("running")
        make_operation("succeeded")
        asked = make_operation(
            "running",
            cancelRequest={"requestedBy": "usr_x", "requestedAt": "2026-11-30T08:00:00Z"},
        )
        client.force_login(operator_user)
        html = client.get("/operations/").content.decode()
        picks = re.findall(r'name="pick" value="([^"]+)"', html)
        assert picks == [running.operation_id]
        assert asked.operation_id in html
        client.force_login(support_user)
        assert 'name="pick"' not in client.get("/operations/").content.decode()

    def test_no_match_says_so(self, support):
        html = support.get("/operations/?raw_status=expired").content.decode()
        assert "No runtime operations match these filters." in html

    def test_detail_keeps_every_internal_value(self, support):
        op = make_operation(
            "failed",
            effectState="failed",
            error={
                "code": "INSTANCE_OFFLINE",
                "message": "Instance offline",
                "operationId": "x",
                "effectState": "failed",
                "retryMode": "resubmit",
                "context": {"lastSeenAt": "2026-11-30T07:40:00Z"},
            },
            projection={"revision": "12", "state": "not_applicable"},
            cancelRequest={
                "requestedBy": "usr_ana",
                "reason": "wrong model",
                "requestedAt": "2026-11-30T07:59:00Z",
            },
        )
        make_event(op, 1, "runtime_operation_started")
        make_event(op, 2, "runtime_rpc_response")
        html = support.get(f"/operations/{op.operation_id}/").content.decode()
        for text in (
            "INSTANCE_OFFLINE",
            "resubmit",
            "safe_to_retry",
            "not_applicable",
            "lastSeenAt",
            "wrong model",
            "runtime_operation_started",
            "runtime_rpc_response",
        ):
            assert text in html, text

    def test_outcome_unknown_banner(self, support):
        op = make_operation("outcome_unknown", effectState="outcome_unknown")
        html = support.get(f"/operations/{op.operation_id}/").content.decode()
        assert "Automatic replay is unsafe" in html


def test_messages_filters(support):
    task = make_task("failed")
    failed = make_message(task, state="failed", stop_reason="max_tokens", body="cut off")
    make_message(task, body="fine")
    html = support.get("/messages/?state=failed&stop_reason=max_tokens").content.decode()
    assert failed.message_id in html and "fine" not in html
    html = support.get(f"/messages/?task={task.task_id}&type=agent_reply").content.decode()
    assert "cut off" in html and "fine" in html


def test_message_rows_link_to_their_place_in_the_task_timeline(support):
    task = make_task("running", task_id="tsk_with/slash")
    filed = make_message(task, body="x" * 100)
    orphan = make_message(task, conversation_id="conv_nobody")
    html = support.get("/messages/").content.decode()
    # The id is one percent-encoded path segment (its "/" too); the server decodes it.
    href = f"/tasks/tsk_with%2Fslash/?protocol=openapi#m-{filed.pk}"
    assert f'href="{href}"' in html
    assert support.get(href.split("#")[0]).context["task"] == task
    assert f'<td class="body-cell">{"x" * 79}…</td>' in html
    row = re.search(rf'<tr><td><code class="id" title="{orphan.message_id}">.*?</tr>', html).group(
        0
    )
    assert 'title="conversation conv_nobody">not mirrored<' in row


def test_dashboard_counts_and_attention(support):
    now = timezone.now()
    make_task("running", now=now, minutes_ago=300)
    make_task("completed", now=now, minutes_ago=5)
    make_operation("outcome_unknown")
    response = support.get(reverse("dashboard"))
    html = response.content.decode()
    assert "Stuck work" in html and "Operations needing attention" in html
    # 96 px of bars and a 16 px time axis under them, labelled in UTC hours.
    assert '<svg viewBox="0 0 480 112"' in html
    assert 'class="tick"' in html and "times in UTC" in html
    assert "outcome_unknown" in html


@pytest.mark.parametrize("url", ["/", "/tasks/", "/operations/", "/messages/", "/audit/log/"])
def test_a_user_without_a_role_is_refused_with_a_plain_message(client, django_user_model, url):
    nobody = django_user_model.objects.create_user("walk-in", password="x")
    client.force_login(nobody)
    response = client.get(url)
    assert response.status_code == 403
    assert "This needs the" in response.content.decode()


def test_audit_log_is_for_admins(client, support_user, admin_user):
    client.force_login(support_user)
    assert client.get("/audit/log/").status_code == 403
    client.force_login(admin_user)
    assert client.get("/audit/log/").status_code == 200


def test_a_role_granted_or_revoked_counts_from_the_next_request(client, django_user_model):
    """Roles are read with the user on every request (one query), never kept longer."""
    make_operation("running")
    user = django_user_model.objects.create_user("rita-roles", password="x")
    support = Group.objects.get_or_create(name=roles.SUPPORT)[0]
    operator = Group.objects.get_or_create(name=roles.OPERATOR)[0]
    admin = Group.objects.get_or_create(name=roles.ADMIN)[0]
    client.force_login(user)
    assert client.get("/operations/").status_code == 403

    user.groups.add(operator)
    page = client.get("/operations/").content.decode()
    assert "Cancel selected…" in page and 'name="pick"' in page

    user.groups.set([support])
    page = client.get("/operations/")
    assert page.status_code == 200
    assert "Cancel selected…" not in page.content.decode()
    assert client.get("/audit/log/").status_code == 403

    user.groups.add(admin)
    assert client.get("/audit/log/").status_code == 200
    user.groups.clear()
    assert client.get("/audit/log/").status_code == 403
    assert client.get("/operations/").status_code == 403

    # A superuser holds the admin role with no group; a deactivated user is signed out.
    django_user_model.objects.filter(pk=user.pk).update(is_superuser=True)
    assert client.get("/audit/log/").status_code == 200
    django_user_model.objects.filter(pk=user.pk).update(is_active=False)
    assert client.get("/operations/").status_code == 302
