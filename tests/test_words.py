"""Issue #14: every status says what to do, in plain words; ids stay readable.

Words for every reason, certainty and retry policy the state tables can produce
(table-driven over the states modules), no rule syntax in what support staff
read, the rule one click away for admins, stuck / deadline banners, the error
code beside the error, middle-ellipsis ids, A2A history in the timeline.
"""

from __future__ import annotations

import datetime as dt
import itertools
import re
from io import StringIO

import pytest
from django.core.management import call_command
from django.test import Client
from django.utils import timezone

from beeos_console.core.links import object_url
from beeos_console.core.tables import middle
from beeos_console.mirror import words
from beeos_console.mirror.states import OUTCOME_CERTAINTIES, RETRY_POLICIES
from operations import states as op_states
from operations.models import RuntimeOperation
from tasks import states as task_states
from tasks.models import Message, Task

from .factories import iso, make_a2a_task, make_operation, make_task
from .shared_db import rolled_back_at_end

# --- every value the tables can produce -------------------------------------------


def task_projections():
    for protocol in task_states.TASK_PROTOCOLS:
        for raw in task_states.known_values(protocol):
            yield task_states.project(protocol, raw)
        yield task_states.project(protocol, "no_such_state")
    for state, stop in itertools.product(
        (*task_states.MESSAGE_STATES, "canceled"), (None, *task_states.STOP_REASONS)
    ):
        yield task_states.project_message(state, stop_reason=stop)


def operation_projections():
    for status, effect, code, mode in itertools.product(
        (*op_states.STATUSES, "canceled", "no_such_status"),
        (None, *op_states.EFFECT_STATES, "weird"),
        (None, *op_states.ERROR_CODES),
        (None, *op_states.RETRY_MODES),
    ):
        yield op_states.project(status, error_code=code, retry_mode=mode, effect_state=effect)


ALL = [*task_projections(), *operation_projections()]
REASONS = sorted({p.reason for p in ALL if p.reason})
CERTAINTIES = sorted({p.outcome_certainty for p in ALL} | set(OUTCOME_CERTAINTIES))
POLICIES = sorted({p.retry_policy for p in ALL} | set(RETRY_POLICIES))
RULE_IDS = sorted({p.rule for p in ALL})


@pytest.mark.parametrize("reason", REASONS)
def test_every_reason_the_tables_produce_has_its_own_sentence(reason):
    written = reason in words.REASON_WORDS or reason in words.ERROR_CODE_WORDS
    assert written, f"no sentence written for reason {reason!r}"
    assert len(words.reason_words(reason)) > len(reason) + 10


@pytest.mark.parametrize("certainty", CERTAINTIES)
def test_every_certainty_has_a_sentence(certainty):
    assert certainty in words.CERTAINTY_WORDS


@pytest.mark.parametrize("policy", POLICIES)
def test_every_retry_policy_has_a_sentence(policy):
    assert policy in words.RETRY_WORDS


def test_every_runtime_error_code_and_stop_reason_has_a_sentence():
    assert set(op_states.ERROR_CODES) <= set(words.ERROR_CODE_WORDS)
    assert set(task_states.STOP_REASONS) <= set(words.REASON_WORDS)
    assert (
        words.reason_words(task_states.unmapped("x").reason) == words.REASON_WORDS["unmapped_state"]
    )


def test_the_issue_examples_read_as_asked():
    assert words.retry_words("manual_review") == (
        "manual review: check with the agent's owner whether the command ran before doing anything"
    )
    assert words.retry_words("safe_to_retry") == (
        "safe to retry: nothing happened, sending it again is safe"
    )
    assert words.certainty_words("uncertain") == (
        "the outcome is not known: the command may have reached the agent or device"
    )


def all_sentences():
    yield from words.REASON_WORDS.values()
    yield from words.ERROR_CODE_WORDS.values()
    yield from words.CERTAINTY_WORDS.values()
    yield from words.RETRY_WORDS.values()
    yield from words.STATUS_WORDS.values()
    for p in ALL:
        yield words.summary(p.status, p.reason, p.outcome_certainty, p.retry_policy)
        yield words.what_to_do(p.status, p.outcome_certainty, p.retry_policy)


def test_no_sentence_carries_rule_syntax():
    rule_ids = [r for r in RULE_IDS if ":" in r]
    for sentence in all_sentences():
        assert "`" not in sentence, sentence
        assert "→" not in sentence, sentence
        for rule in rule_ids:
            assert rule not in sentence, (rule, sentence)


def test_an_unknown_reason_or_code_is_still_said_in_words():
    assert "producer" in words.reason_words("disk_full")
    assert "NEW_CODE" in words.reason_words("NEW_CODE")
    assert words.reason_words("") == ""


# --- the demo's detail pages: words for support, the rule for admins ---------------

RULE_PATTERN = re.compile(r"\b(?:openapi|a2a|product|message|operation):[a-z_]+")


def visible_text(html: str) -> str:
    """The page without its raw JSON payloads (verbatim upstream data)."""
    return re.sub(r'<pre class="json">.*?</pre>', "", html, flags=re.S)


@pytest.fixture(scope="class")
def demo(django_db_setup, django_db_blocker):
    """Seeded once for the class's tests, rolled back after the last (``shared_db``)."""
    with rolled_back_at_end(django_db_blocker):
        call_command("seed_demo", "--no-users", stdout=StringIO())
        yield


def demo_cases():
    """One task per (protocol, raw state, reason) and one operation per projection shape."""
    tasks, ops = {}, {}
    for t in Task.objects.order_by("id"):
        tasks.setdefault((t.protocol, t.raw_state, t.reason, bool(t.error_code)), t)
    for o in RuntimeOperation.objects.order_by("id"):
        ops.setdefault((o.projection_rule, o.raw_status, o.effect_state), o)
    return list(tasks.values()), list(ops.values())


@pytest.mark.django_db
class TestDemoPages:
    """The demo's pages (seeded once for these tests: ``demo``)."""

    def test_demo_detail_pages_speak_words_to_support_and_show_admins_the_rule(
        self, demo, support_user, admin_user
    ):
        support, admin = Client(), Client()
        support.force_login(support_user)
        admin.force_login(admin_user)
        tasks, ops = demo_cases()
        assert len(tasks) > 20 and len(ops) > 10
        for task in tasks:
            url = object_url("tasks:detail", task.task_id, protocol=task.protocol)
            html = support.get(url).content.decode()
            text = visible_text(html)
            assert "`" not in text, url
            assert task.projection_rule not in text, (url, task.projection_rule)
            assert not RULE_PATTERN.search(text), (url, RULE_PATTERN.search(text))
            assert "rule-details" not in html
            plain = html.replace("&#x27;", "'").lower()
            assert words.retry_words(task.retry_policy).lower() in plain
            if task.reason:
                assert words.reason_words(task.reason)[:30].lower() in plain, url
            admin_html = admin.get(url).content.decode()
            assert '<details class="rule-details">' in admin_html
            assert task.projection_rule in admin_html
        for op in ops:
            url = object_url("operations:detail", op.operation_id)
            html = support.get(url).content.decode()
            text = visible_text(html)
            assert "`" not in text, url
            assert not RULE_PATTERN.search(text), (url, RULE_PATTERN.search(text))
            assert words.retry_words(op.retry_policy).lower() in html.replace("&#x27;", "'").lower()
            admin_html = admin.get(url).content.decode()
            assert f"<code>{op.projection_rule}</code>" in admin_html.replace("&#x27;", "'")

    def test_demo_lists_and_dashboard_carry_no_rule_syntax(self, demo, support_user):
        support = Client()
        support.force_login(support_user)
        for url in ("/", "/tasks/", "/operations/", "/messages/", "/tasks/?status=failed"):
            html = visible_text(support.get(url).content.decode())
            assert "`" not in html, url
            assert not RULE_PATTERN.search(html), (url, RULE_PATTERN.search(html))
            if url != "/messages/":
                assert 'class="copy" data-copy="' in html, url

    def test_cancel_refusals_speak_words(self, demo, operator_user):
        client = Client()
        client.force_login(operator_user)
        for raw in ("rejected", "timeout", "completed"):
            task = Task.objects.filter(protocol="openapi", raw_state=raw).first()
            html = client.get(object_url("tasks:detail", task.task_id, protocol="openapi"))
            html = html.content.decode()
            refusal = re.search(r"Cannot cancel: (.*?)</p>", html, re.S).group(1)
            assert "`" not in refusal and task.projection_rule not in refusal
            assert "already ended" in refusal
        rejected = Task.objects.filter(protocol="openapi", raw_state="rejected").first()
        html = client.get(object_url("tasks:detail", rejected.task_id, protocol="openapi"))
        assert "safe to retry: nothing happened" in html.content.decode()

    def test_the_rejected_a2a_task_has_no_green_completed_message(self, demo, support_user):
        client = Client()
        client.force_login(support_user)
        rejected = [t for t in Task.objects.filter(protocol="a2a") if t.reason == "rejected"]
        assert rejected
        for task in rejected:
            html = client.get(object_url("tasks:detail", task.task_id, protocol="a2a"))
            timeline = re.search(r'<ol class="timeline">.*?</ol>', html.content.decode(), re.S)
            timeline = timeline.group(0)
            assert "badge-green" not in timeline
            assert ">completed<" not in timeline
            # The status message carries the task's own outcome; the rest is history.
            assert "status message" in timeline and 'badge badge-red">failed<' in timeline
            assert 'class="pill history"' in timeline


def test_a2a_history_is_neutral_in_the_message_list(db, support_user):
    make_a2a_task(
        "rejected",
        history=[{"messageId": "a2amsg_hist_1", "role": "user", "parts": [{"text": "hi"}]}],
    )
    assert Message.objects.filter(message_id="a2amsg_hist_1").exists()
    client = Client()
    client.force_login(support_user)
    html = client.get("/messages/").content.decode()
    row = re.search(r"<tr><td>[^\n]*a2amsg_hist_1.*?</tr>", html).group(0)
    assert "badge-green" not in row and 'class="pill history"' in row


# --- stuck and deadline banners --------------------------------------------------


def test_stuck_and_deadline_banners_on_the_task_page(support, settings):
    settings.CONSOLE_STUCK_AFTER_MINUTES = 60
    now = timezone.now()
    quiet = make_task(
        "running", now=now, minutes_ago=240, deadline_at=iso(now - dt.timedelta(hours=1))
    )
    html = support.get(f"/tasks/{quiet.task_id}/").content.decode()
    assert 'id="stuck-banner"' in html and "more than 60 minutes" in html
    assert 'id="deadline-banner"' in html and "Deadline passed." in html

    fresh = make_task(
        "running", now=now, minutes_ago=5, deadline_at=iso(now + dt.timedelta(hours=1))
    )
    html = support.get(f"/tasks/{fresh.task_id}/").content.decode()
    assert "stuck-banner" not in html and "deadline-banner" not in html

    ended = make_task(
        "completed", now=now, minutes_ago=240, deadline_at=iso(now - dt.timedelta(hours=1))
    )
    html = support.get(f"/tasks/{ended.task_id}/").content.decode()
    assert "stuck-banner" not in html and "deadline-banner" not in html


def test_stuck_banner_on_the_operation_page(support, settings):
    settings.CONSOLE_STUCK_AFTER_MINUTES = 60
    old = iso(timezone.now() - dt.timedelta(hours=3))
    stuck = make_operation("running", createdAt=old, updatedAt=old)
    assert 'id="stuck-banner"' in support.get(f"/operations/{stuck.operation_id}/").content.decode()
    done = make_operation("succeeded", createdAt=old, updatedAt=old)
    assert "stuck-banner" not in support.get(f"/operations/{done.operation_id}/").content.decode()
    now = iso(timezone.now())
    fresh = make_operation("running", createdAt=now, updatedAt=now)
    assert "stuck-banner" not in support.get(f"/operations/{fresh.operation_id}/").content.decode()


# --- the error code beside the error text ----------------------------------------------


def test_error_code_beside_the_error_text(support):
    task = make_task("failed", error={"code": "service_timeout", "message": "gave up"})
    html = support.get(f"/tasks/{task.task_id}/").content.decode()
    cell = re.search(r'<dd class="error">(.*?)</dd>', html, re.S).group(1)
    assert '<code class="error-code">service_timeout</code>' in cell and "gave up" in cell

    op = make_operation(
        "failed",
        effectState="failed",
        error={"code": "INSTANCE_OFFLINE", "message": "instance went away", "retryMode": "none"},
    )
    html = support.get(f"/operations/{op.operation_id}/").content.decode()
    cell = re.search(r'<dd class="error">(.*?)</dd>', html, re.S).group(1)
    assert "INSTANCE_OFFLINE" in cell and "instance went away" in cell
    assert "The instance was offline." in cell
    # In the lists: the code with its words on hover.
    rows = support.get("/operations/").content.decode()
    assert f'title="{words.error_code_words("INSTANCE_OFFLINE")}">INSTANCE_OFFLINE<' in rows
    rows = support.get("/tasks/").content.decode()
    assert ">service_timeout</code>" in rows


# --- readable ids ----------------------------------------------------------------------


def test_middle_ellipsis_keeps_both_ends():
    assert middle("tsk_abcdefghijklmnopqrstuvwxyz", 11) == "tsk_a…vwxyz"
    assert middle("short", 11) == "short"
    assert len(middle("x" * 100, 30)) == 30


@pytest.fixture
def support(db, support_user):
    client = Client()
    client.force_login(support_user)
    return client


def test_long_ids_in_lists_and_dashboard_have_title_and_copy_button(support, settings):
    settings.CONSOLE_STUCK_AFTER_MINUTES = 60
    long_id = "tsk_" + "a" * 30 + "_tail_XYZ"
    make_task("running", task_id=long_id, now=timezone.now(), minutes_ago=600)
    short = middle(long_id, 30)
    assert short.startswith("tsk_") and short.endswith("tail_XYZ")
    page = support.get("/tasks/").content.decode()
    assert f'title="{long_id}"><code class="id">{short}</code></a>' in page
    assert f'<button type="button" class="copy" data-copy="{long_id}"' in page
    dashboard = support.get("/").content.decode()
    assert f'title="{long_id}"><code class="id">{middle(long_id, 36)}</code></a>' in dashboard
    assert f'data-copy="{long_id}"' in dashboard

    op_id = "op_" + "b" * 40 + "_end"
    make_operation("running", id=op_id)
    page = support.get("/operations/").content.decode()
    assert f'title="{op_id}"><code class="id">{middle(op_id, 22)}</code></a>' in page
    assert f'data-copy="{op_id}"' in page


def test_hostile_ids_stay_escaped_in_the_title_and_copy_button(support):
    odd = 'tsk_"<b>x</b>&' + "z" * 40
    make_task("running", task_id=odd)
    page = support.get("/tasks/").content.decode()
    assert "<b>x" not in page
    assert 'data-copy="tsk_&quot;&lt;b&gt;x&lt;/b&gt;&amp;' in page


def test_the_drift_banner_names_rule_ids_to_admins_only(support, admin_user):
    task = make_task("timeout")
    Task.objects.filter(pk=task.pk).update(projection_rule="openapi:old_rule", reason="")
    html = support.get(f"/tasks/{task.task_id}/").content.decode()
    assert "Projection drift." in html and "the rule that decided it changed" in html
    assert "openapi:old_rule" not in html and "openapi:timeout" not in html
    admin = Client()
    admin.force_login(admin_user)
    html = admin.get(f"/tasks/{task.task_id}/").content.decode()
    assert "<code>openapi:old_rule</code>" in html
