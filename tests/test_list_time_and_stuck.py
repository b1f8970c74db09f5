"""Issue #14: time presets, "longest stuck first", and dashboard numbers that match their lists."""

from __future__ import annotations

import datetime as dt
import re
from html import unescape

import pytest
from django.urls import reverse
from django.utils import timezone

from beeos_console.core.pagination import paginate
from tasks.models import Task

from .factories import iso, make_message, make_operation, make_task

pytestmark = pytest.mark.django_db


def task_ids(response) -> list[str]:
    return re.findall(r'href="/tasks/([^/"]+)/\?protocol=', response.content.decode())


def matching(response) -> int:
    return int(re.search(r'class="matching">([\d,]+) matching', response.content.decode())[1])


@pytest.fixture
def support(client, support_user):
    client.force_login(support_user)
    return client


class TestTimePresets:
    def test_presets_keep_only_rows_created_in_the_last_hour_day_week(self, support):
        now = timezone.now()
        hour = make_task("running", now=now, minutes_ago=30)
        day = make_task("running", now=now, minutes_ago=60 * 5)
        week = make_task("running", now=now, minutes_ago=60 * 24 * 3)
        make_task("running", now=now, minutes_ago=60 * 24 * 30)
        assert task_ids(support.get("/tasks/?created_within=1h")) == [hour.task_id]
        assert task_ids(support.get("/tasks/?created_within=24h")) == [hour.task_id, day.task_id]
        assert task_ids(support.get("/tasks/?created_within=7d")) == [
            hour.task_id,
            day.task_id,
            week.task_id,
        ]

    def test_every_list_offers_the_presets_labelled_utc_with_custom_fields(self, support):
        for url in ("/tasks/", "/operations/", "/messages/"):
            html = support.get(url).content.decode()
            assert "Created (UTC)" in html, url
            for value, label in (("1h", "last 1 h"), ("24h", "last 24 h"), ("7d", "last 7 d")):
                assert f'value="{value}"' in html and label in html, url
            assert "Custom: created from (UTC)" in html, url

    def test_a_preset_shows_as_a_removable_chip_and_checked_radio(self, support):
        html = support.get("/tasks/?created_within=24h").content.decode()
        assert re.search(r'value="24h"[^>]*checked', html)
        assert "<code>24h</code>" in html

    def test_an_unknown_preset_is_a_clear_400(self, support):
        response = support.get("/tasks/?created_within=2y")
        assert response.status_code == 400
        assert "created_within" in response.content.decode()

    def test_messages_filter_on_the_presets(self, support):
        now = timezone.now()
        task = make_task()
        recent = make_message(task, created_at=iso(now - dt.timedelta(minutes=10)))
        make_message(task, created_at=iso(now - dt.timedelta(days=2)))
        html = support.get("/messages/?created_within=24h").content.decode()
        assert recent.message_id in html
        assert matching(support.get("/messages/?created_within=24h")) == 1


class TestLongestStuckFirst:
    def test_oldest_last_change_first_among_non_terminal_work(self, support):
        now = timezone.now()
        newer = make_task("running", now=now, minutes_ago=90)
        oldest = make_task("running", now=now, minutes_ago=600)
        make_task("completed", now=now, minutes_ago=900)  # terminal: never "stuck"
        make_task("running", now=now, minutes_ago=2)  # not stuck for 60 min
        response = support.get("/tasks/?stuck=60&sort=stuck")
        assert task_ids(response) == [oldest.task_id, newer.task_id]
        assert "only queued and processing work" in response.content.decode()

    def test_ascending_keyset_pages_walk_forward_and_back(self, support):
        now = timezone.now()
        made = [make_task("running", now=now, minutes_ago=200 - i) for i in range(120)]
        first = support.get("/tasks/?sort=stuck")
        page1 = task_ids(first)
        assert page1 == [t.task_id for t in made[:50]]
        older = re.search(r'href="(/tasks/\?[^"]*after=[^"]+)"', first.content.decode())[1]
        second = support.get(unescape(older))
        page2 = task_ids(second)
        assert page2 == [t.task_id for t in made[50:100]]
        third = support.get(
            unescape(re.search(r'href="(/tasks/\?[^"]*after=[^"]+)"', second.content.decode())[1])
        )
        assert task_ids(third) == [t.task_id for t in made[100:]]
        assert 'rel="next"' not in third.content.decode()
        back = re.search(r'href="(/tasks/\?[^"]*before=[^"]+)"', second.content.decode())[1]
        assert task_ids(support.get(unescape(back))) == page1

    def test_paginate_both_orders_share_cursors(self):
        now = timezone.now()
        for i in range(7):
            make_task("running", now=now, minutes_ago=i)
        qs = Task.objects.all()
        asc = [t.pk for t in Task.objects.order_by("updated_at", "pk")]
        page = paginate(qs, "updated_at", page_size=3, ascending=True)
        assert [t.pk for t in page.rows] == asc[:3] and page.prev_cursor is None
        page2 = paginate(qs, "updated_at", page_size=3, ascending=True, after=page.next_cursor)
        assert [t.pk for t in page2.rows] == asc[3:6]
        back = paginate(qs, "updated_at", page_size=3, ascending=True, before=page2.prev_cursor)
        assert [t.pk for t in back.rows] == asc[:3] and back.prev_cursor is None
        # Descending stays the default.
        desc = paginate(qs, "updated_at", page_size=3)
        assert [t.pk for t in desc.rows] == asc[::-1][:3]

    def test_dashboard_stuck_link_lists_longest_stuck_first(self, support, settings):
        settings.CONSOLE_STUCK_AFTER_MINUTES = 60
        now = timezone.now()
        a = make_task("running", now=now, minutes_ago=100)
        b = make_task("running", now=now, minutes_ago=500)
        html = support.get(reverse("dashboard")).content.decode()
        link = re.search(r'href="(/tasks/\?stuck=60[^"]*)"', html)[1]
        assert "sort=stuck" in link
        assert task_ids(support.get(unescape(link))) == [b.task_id, a.task_id]


def dashboard_links(html: str, path: str) -> dict[str, tuple[str, int]]:
    """``{status: (href, number)}`` of the dashboard's "last 24 h" links to ``path``."""
    found = {}
    for href, number in re.findall(
        rf'<a href="({re.escape(path)}\?[^"]*created_after=[^"]*)" class="num">(\d+)</a>', html
    ):
        href = unescape(href)
        key = re.search(r"(?:status|raw_status)=([^&]+)", href)[1]
        found[key] = (href, int(number))
    return found


class TestDashboardNumbersMatchTheirLists:
    def test_task_numbers_equal_the_linked_lists_and_the_chart(self, support):
        now = timezone.now()
        for minutes in (1, 50, 300, 60 * 23, 60 * 23 + 50, 60 * 26, 60 * 24 * 4):
            make_task("running", now=now, minutes_ago=minutes)
            make_task("failed", now=now, minutes_ago=minutes + 3)
        make_task("completed", now=now, minutes_ago=10)
        response = support.get(reverse("dashboard"))
        html = response.content.decode()
        links = dashboard_links(html, "/tasks/")
        assert set(links) >= {"processing", "failed", "completed"}
        legend = {key: total for key, _colour, total in response.context["task_chart"].legend}
        for status, (href, number) in links.items():
            listed = support.get(href)
            assert listed.status_code == 200
            assert matching(listed) == number, (status, href)
            assert legend[status] == number, status
        assert links["completed"][1] == 1

    def test_operation_numbers_are_links_equal_to_their_lists(self, support):
        now = timezone.now()
        for i, status in enumerate(["outcome_unknown", "running", "failed", "expired"] * 3):
            minutes = [5, 60 * 22, 60 * 30][i % 3]
            make_operation(status, createdAt=iso(now - dt.timedelta(minutes=minutes)))
        response = support.get(reverse("dashboard"))
        html = response.content.decode()
        by_status = dashboard_links(html, "/operations/")
        assert by_status, "operations numbers are links"
        raw = {k: v for k, v in by_status.items() if k in ("outcome_unknown", "expired")}
        assert raw, "attention numbers are links"
        legend = {k: t for k, _c, t in response.context["attention_chart"].legend}
        for status, (href, number) in by_status.items():
            assert matching(support.get(href)) == number, (status, href)
        for status in ("outcome_unknown", "expired"):
            assert legend[status] == response.context["attention_counts"].get(status, 0)
