"""The search box, continued (#14): agents by id fragment, "more results" pages per group,
and full text over very common words that answers within a bounded read, saying so."""

from __future__ import annotations

import datetime as dt
import re
from html import unescape
from urllib.parse import parse_qs, urlsplit

import pytest
from django.db.models import F, Lookup

from beeos_console.core.pagination import encode_cursor
from beeos_console.search import selectors, text

from .factories import BASE, iso, make_message, make_task

pytestmark = pytest.mark.django_db


@pytest.fixture
def support(client, support_user):
    client.force_login(support_user)
    return client


def group_ids(html: str, kind: str) -> list[str]:
    """The ids listed in the ``kind`` group of a search page, in order."""
    section = re.search(rf'data-kind="{kind}">(.*?)</section>', html, re.DOTALL)
    return re.findall(r"<code>([^<]+)</code>", section[1]) if section else []


def more_link(html: str, kind: str) -> str | None:
    section = re.search(rf'data-kind="{kind}">(.*?)</section>', html, re.DOTALL)
    found = section and re.search(r'<a href="([^"]+)" rel="next">', section[1])
    return unescape(found[1]) if found else None


# --- agents ------------------------------------------------------------------------------


class TestAgents:
    def test_a_fragment_of_an_agent_id_finds_the_agent_and_links_its_tasks(self, support):
        make_task("running", agent_id="agt_Lisbon_router_7")
        make_task("failed", agent_id="agt_Lisbon_router_7")
        make_task("running", agent_id="agt_porto_router")
        make_task("running", agent_id="agt_other")
        html = support.get("/search/", {"q": "router"}).content.decode()
        assert group_ids(html, "agents") == ["agt_Lisbon_router_7", "agt_porto_router"]
        assert 'href="/agents/agt_Lisbon_router_7/"' in html
        # Any part of the id, in any case: the one agent opens directly.
        response = support.get("/search/", {"q": "SBON_ROU"})
        assert response["Location"] == "/agents/agt_Lisbon_router_7/"

    def test_one_agent_opens_its_page_which_links_its_tasks(self, support):
        mine = make_task("running", agent_id="agt_unique_parcel")
        make_task("running", agent_id="agt_else")
        response = support.get("/search/", {"q": "unique_parc"})
        assert response.status_code == 302
        assert response["Location"] == "/agents/agt_unique_parcel/"
        page = support.get(response["Location"]).content.decode()
        assert "/tasks/?agent_id=agt_unique_parcel" in page
        listed = support.get("/tasks/", {"agent_id": "agt_unique_parcel"}).content.decode()
        assert mine.task_id in listed
        # The whole id too.
        whole = support.get("/search/", {"q": "agt_unique_parcel"})
        assert whole["Location"] == "/agents/agt_unique_parcel/"

    def test_agents_in_the_dropdown_and_the_api(self, client, support_user):
        client.force_login(support_user)
        make_task("running", agent_id="agt_drop_1")
        make_task("running", agent_id="agt_drop_2")
        dropdown = client.get("/search/", {"q": "drop_"}, HTTP_HX_REQUEST="true").content
        assert b'data-label="Agents"' in dropdown and b"agt_drop_2" in dropdown
        data = client.get("/api/v1/search/", {"q": "drop_"}).json()
        agents = next(g for g in data["groups"] if g["kind"] == "agents")
        assert [h["id"] for h in agents["hits"]] == ["agt_drop_1", "agt_drop_2"]

    def test_with_more_agents_than_the_walk_the_trigram_index_answers(self, support, monkeypatch):
        monkeypatch.setattr(selectors, "AGENT_WALK", 3)
        for i in range(8):
            make_task("running", agent_id=f"agt_{i:02d}_walk")
        make_task("running", agent_id="agt_zy_needle")  # past the walk's three agents
        make_task("running", agent_id="agt_zz_needle")
        html = support.get("/search/", {"q": "needle"}).content.decode()
        assert group_ids(html, "agents") == ["agt_zy_needle", "agt_zz_needle"]
        html = support.get("/search/", {"q": "walk"}).content.decode()
        assert group_ids(html, "agents") == [f"agt_{i:02d}_walk" for i in range(8)]

    def test_when_the_trigram_index_is_too_slow_the_walk_says_how_far_it_checked(
        self, support, monkeypatch
    ):
        class SlowILike(Lookup):
            lookup_name = "slow_ilike"
            prepare_rhs = False

            def as_sql(self, compiler, connection):
                lhs, lhs_params = self.process_lhs(compiler, connection)
                rhs, rhs_params = self.process_rhs(compiler, connection)
                return f"({lhs} ILIKE {rhs} AND pg_sleep(0.05) IS NOT NULL)", (
                    *lhs_params,
                    *rhs_params,
                )

        fast = selectors.ilike

        def slow(column, fragment):
            return SlowILike(F(column), fast(column, fragment).rhs)

        monkeypatch.setattr(selectors, "AGENT_WALK", 2)
        monkeypatch.setattr(selectors, "AGENT_TIMEOUT_MS", 20)
        monkeypatch.setattr(selectors, "ilike", slow)
        make_task("running", agent_id="agt_a_slow")
        make_task("running", agent_id="agt_b_other")
        make_task("running", agent_id="agt_c_slow")
        html = support.get("/search/", {"q": "_slow"}).content.decode()
        assert group_ids(html, "agents") == ["agt_a_slow"]  # the walk's own match
        assert "Only the agent ids up to agt_b_other were checked" in html
        further = more_link(html, "agents")
        assert further and "more=agents" in further
        assert group_ids(support.get(further).content.decode(), "agents") == ["agt_c_slow"]


# --- "more results" pages ----------------------------------------------------------------


class TestMoreResults:
    def test_tasks_past_the_first_twenty_page_by_keyset_in_the_url(self, support):
        made = [make_task("running", task_id=f"tsk_page_{i:03d}", minutes_ago=i) for i in range(45)]
        newest_first = [t.task_id for t in made]
        first = support.get("/search/", {"q": "tsk_page_"}).content.decode()
        assert group_ids(first, "tasks") == newest_first[:20]
        link = more_link(first, "tasks")
        params = parse_qs(urlsplit(link).query)
        assert params["q"] == ["tsk_page_"] and params["more"] == ["tasks"] and params["after"]
        second = support.get(link)
        assert second.status_code == 200
        html = second.content.decode()
        assert group_ids(html, "tasks") == newest_first[20:40]
        assert 'data-kind="operations"' not in html  # that group only
        assert "All results for “tsk_page_”" in html
        third = support.get(more_link(html, "tasks")).content.decode()
        assert group_ids(third, "tasks") == newest_first[40:]
        assert more_link(third, "tasks") is None

    def test_contexts_and_agents_page_by_id(self, support):
        for i in range(23):
            make_task("running", agent_id=f"agt_many_{i:02d}", context_id=f"ctx_many_{i:02d}")
        html = support.get("/search/", {"q": "_many_"}).content.decode()
        for kind, prefix in (("agents", "agt_many_"), ("contexts", "ctx_many_")):
            assert group_ids(html, kind) == [f"{prefix}{i:02d}" for i in range(20)]
            rest = support.get(more_link(html, kind)).content.decode()
            assert group_ids(rest, kind) == [f"{prefix}{i:02d}" for i in range(20, 23)]

    def test_message_text_pages_too(self, support):
        task = make_task("completed")
        for i in range(25):
            make_message(
                task,
                body=f"parcel {i} was rerouted",
                created_at=iso(BASE - dt.timedelta(minutes=i)),
            )
        html = support.get("/search/", {"q": "rerouted"}).content.decode()
        first = group_ids(html, "message_text")
        rest = group_ids(
            support.get(more_link(html, "message_text")).content.decode(), "message_text"
        )
        assert len(first) == 20 and len(rest) == 5 and not set(first) & set(rest)

    @pytest.mark.parametrize(
        "after",
        ["garbage", encode_cursor(7, 1), encode_cursor("x" * 300, 1), "eyJ0IjogMX0"],
    )
    def test_a_forged_cursor_is_a_400_showing_the_first_page(self, support, after):
        make_task("running", task_id="tsk_forged_1", agent_id="agt_forged")
        for group in ("tasks", "agents", "message_text"):
            response = support.get("/search/", {"q": "forged", "more": group, "after": after})
            assert response.status_code == 400, group
            html = response.content.decode()
            assert "not valid any more" in html
        api = support.get("/api/v1/search/", {"q": "forged", "more": "tasks", "after": after})
        assert api.status_code == 400 and "after" in api.json()

    def test_an_unknown_group_is_a_400(self, support):
        make_task("running", task_id="tsk_group_1")
        response = support.get("/search/", {"q": "group_1", "more": "nonsense"})
        assert response.status_code == 400
        assert "tsk_group_1" in response.content.decode()
        assert support.get("/api/v1/search/", {"q": "x1x", "more": "nope"}).status_code == 400

    def test_the_api_pages_with_next_cursor(self, support):
        for i in range(22):
            make_task("running", task_id=f"tsk_api_page_{i:02d}", minutes_ago=i)
        first = support.get("/api/v1/search/", {"q": "api_page"}).json()
        tasks = next(g for g in first["groups"] if g["kind"] == "tasks")
        assert len(tasks["hits"]) == 20 and tasks["more"] and tasks["next_cursor"]
        rest = support.get(
            "/api/v1/search/", {"q": "api_page", "more": "tasks", "after": tasks["next_cursor"]}
        ).json()
        assert [h["id"] for h in rest["groups"][0]["hits"]] == [
            "tsk_api_page_20",
            "tsk_api_page_21",
        ]
        assert rest["groups"][0]["next_cursor"] is None


# --- full text: bounded, never claiming "no match" about rows not read ---------------------


class TestBoundedFullText:
    @pytest.fixture
    def messages(self):
        """Twelve messages of common words; only the oldest holds the phrase."""
        task = make_task("completed")
        made = []
        for i in range(12):
            body = "please handle the ticket for me" if i == 11 else "ticket handle me please"
            created = iso(BASE - dt.timedelta(minutes=i))
            made.append(make_message(task, body=body, created_at=created))
        return made

    def test_a_phrase_the_newest_rows_lack_says_how_far_it_looked_then_looks_further(
        self, support, monkeypatch, messages
    ):
        monkeypatch.setattr(text, "GIN_CANDIDATES", 0)  # as with very common words
        monkeypatch.setattr(text, "WINDOW", 5)
        first = support.get("/search/", {"q": '"handle the ticket"'})
        html = first.content.decode()
        assert group_ids(html, "message_text") == []
        assert "No match among the newest 5 messages (back to" in html
        assert "older ones were not searched yet" in html
        assert "Nothing matches" not in html  # never "no match" for rows not read
        second = support.get(more_link(html, "message_text")).content.decode()
        assert "No match among the next 5 messages" in second
        third = support.get(more_link(second, "message_text")).content.decode()
        assert group_ids(third, "message_text") == [messages[11].message_id]
        assert "<mark>handle</mark> <mark>the</mark> <mark>ticket</mark>" in third
        assert more_link(third, "message_text") is None  # the oldest row was read

    def test_common_words_fill_a_page_from_the_newest_rows(self, support, monkeypatch, messages):
        monkeypatch.setattr(text, "GIN_CANDIDATES", 0)
        monkeypatch.setattr(text, "WINDOW", 5)
        html = support.get("/search/", {"q": "ticket -zebra"}).content.decode()
        ids = group_ids(html, "message_text")
        assert ids == [m.message_id for m in messages[:5]]
        assert "These are all the matches among the newest 5 messages" in html

    def test_few_candidates_are_all_found_and_checked(self, support, messages):
        # Few rows hold "handle" and "ticket": the GIN way finds the one with the phrase,
        # however many newer rows lack it.
        html = support.get("/search/", {"q": '"handle the ticket" -zebra'}).content.decode()
        assert group_ids(html, "message_text") == [messages[11].message_id]
        assert "not searched" not in html

    def test_a_negation_alone_reads_the_newest_rows(self, support, monkeypatch, messages):
        monkeypatch.setattr(text, "WINDOW", 3)
        assert text.indexable_part("-zebra") in text.NOT_INDEXABLE
        html = support.get("/search/", {"q": "-zebra"}).content.decode()
        assert group_ids(html, "message_text") == [m.message_id for m in messages[:3]]

    def test_the_planner_estimate_is_read_without_running_the_query(self, messages):
        source = text.BY_KEY["message_text"]
        assert text.estimated_rows(source, text.indexable_part("ticket")) >= 1
        assert text.indexable_part('"handle the ticket" -me') == "'handle' <-> 'the' <-> 'ticket'"
