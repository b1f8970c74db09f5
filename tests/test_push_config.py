"""An A2A task's push-notification settings, read on demand through ``beeos-cloud-sdk``
(``a2a.invoke`` with seed 003's ``ListTaskPushNotificationConfigs``) over real HTTP from the
stand-in Cloud: listed without their secrets, every failure in words with its code."""

from __future__ import annotations

import json
import uuid

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from beeos_console.core.links import object_url
from beeos_console.upstream import clients
from tasks.services.write import ingest_a2a_task
from tests.standin import BeeOSStandIn

from .factories import FEEDER, make_task

pytestmark = pytest.mark.django_db

KEY = "bsk_push_test"
PUSH_VIEW_QUERIES = 3  # the session, the user with its roles, then one read of the task
AGENT = "agt_push_desk"
TOKEN = "tok_SECRET_do_not_show_8f3a"
CREDENTIALS = "cred_SECRET_do_not_show_77"
CONFIGS = [
    {
        "id": "pnc_with_token",
        "url": "https://hooks.example.com/a2a/notify",
        "token": TOKEN,
        "authentication": {"scheme": "Bearer", "credentials": CREDENTIALS},
    },
    {"id": "pnc_plain", "url": "https://other.example.org/push"},
]


@pytest.fixture(autouse=True)
def timeouts(monkeypatch):
    monkeypatch.setattr(clients, "TIMEOUT", (1.0, 3.0))


@pytest.fixture
def cloud(settings):
    with BeeOSStandIn(api_key=KEY) as server:
        settings.BEEOS_CLOUD_URL = server.cloud_url
        settings.BEEOS_CLOUD_API_KEY = KEY
        yield server
    assert server.errors == []  # the stand-in never crashed (nor got a bad InvokeA2ARequest)


@pytest.fixture
def support(client: Client, support_user) -> Client:
    client.force_login(support_user)
    return client


def a2a_task(cloud: BeeOSStandIn, task_id: str | None = None, agent_id: str = AGENT):
    """The same A2A task upstream (the stand-in) and in our mirror."""
    view = cloud.add_a2a_task(task_id=task_id or f"a2a_{uuid.uuid4().hex[:12]}", agent_id=agent_id)
    return ingest_a2a_task(view, actor=FEEDER).obj


def push_url(task, **query) -> str:
    return object_url("task-push-config", task.task_id, protocol=task.protocol, show=1, **query)


def fragment(client: Client, task) -> str:
    response = client.get(push_url(task), headers={"HX-Request": "true"})
    assert response.status_code == 200
    return response.content.decode()


def rpc_calls(cloud: BeeOSStandIn, agent_id: str = AGENT) -> list[dict]:
    return [json.loads(r.body) for r in cloud.requests_to("POST", f"/v1/a2a/{agent_id}")]


def test_configs_are_listed_without_their_secrets(cloud, support):
    task = a2a_task(cloud)
    cloud.set_push_configs(task.task_id, CONFIGS)
    html = fragment(support, task)
    assert "pnc_with_token" in html and "https://hooks.example.com/a2a/notify" in html
    assert "pnc_plain" in html and "https://other.example.org/push" in html
    assert "Bearer" in html
    row = html.split("pnc_with_token", 1)[1].split("</tr>", 1)[0]
    assert row.count(">set<") == 2  # token and credentials: set, never shown
    plain = html.split("pnc_plain", 1)[1].split("</tr>", 1)[0]
    assert plain.count(">not set<") == 2
    assert TOKEN not in html and CREDENTIALS not in html
    # The SDK call went out under seed 003's A2A 1.0 name, for this task, read-only.
    [call] = rpc_calls(cloud)
    assert call["method"] == "ListTaskPushNotificationConfigs"
    assert call["params"]["taskId"] == task.task_id
    assert cloud.effects == []


def test_full_page_never_shows_the_token_either(cloud, support):
    task = a2a_task(cloud)
    cloud.set_push_configs(task.task_id, CONFIGS)
    response = support.get(push_url(task))
    html = response.content.decode()
    assert response.status_code == 200
    assert "<html" in html and "Push-notification settings" in html
    assert "pnc_with_token" in html
    assert TOKEN not in html and CREDENTIALS not in html


def test_a_task_without_configs_says_so(cloud, support):
    task = a2a_task(cloud)
    html = fragment(support, task)
    assert 'id="push-configs-none"' in html
    assert "No push-notification configs" in html


def test_many_configs_are_read_page_by_page(cloud, support):
    task = a2a_task(cloud)
    many = [{"id": f"pnc_{i:03d}", "url": f"https://h.example.com/{i}"} for i in range(150)]
    cloud.set_push_configs(task.task_id, many)
    html = fragment(support, task)
    assert "pnc_000" in html and "pnc_149" in html
    assert "150 push-notification configs" in html
    assert len(rpc_calls(cloud)) == 2


def test_an_agent_without_push_support_is_told_with_32003(cloud, support):
    cloud.set_push_supported(AGENT, False)
    task = a2a_task(cloud)
    html = fragment(support, task)
    assert "push notifications are not supported by this agent" in html
    assert "-32003" in html and "PUSH_NOTIFICATION_NOT_SUPPORTED" in html


def test_a_task_the_agent_does_not_know_is_told_with_32001(cloud, support):
    view = {**cloud.add_a2a_task(agent_id="agt_elsewhere"), "id": "a2a_only_in_mirror"}
    view["target_agent_id"] = AGENT
    task = ingest_a2a_task(view, actor=FEEDER).obj
    html = fragment(support, task)
    assert "the A2A task was not found" in html
    assert "-32001" in html and "TASK_NOT_FOUND" in html


def test_no_agent_card_is_told_with_32007(cloud, support):
    task = a2a_task(cloud)
    cloud.a2a_error(-32007, "AGENT_CARD_NOT_CONFIGURED", jsonrpc=True, pattern=f"/v1/a2a/{AGENT}")
    html = fragment(support, task)
    assert "no agent card is configured" in html
    assert "-32007" in html and "AGENT_CARD_NOT_CONFIGURED" in html


def test_a2a_switched_off_is_told_with_403_a2a_disabled(cloud, support):
    cloud.set_agent_card(AGENT, a2a_enabled=False)
    task = a2a_task(cloud)
    html = fragment(support, task)
    assert "A2A is switched off for this agent" in html
    assert "403 a2a_disabled" in html


def test_an_unreachable_cloud_is_told(cloud, support):
    task = a2a_task(cloud)
    cloud.stop()
    html = fragment(support, task)
    assert "BeeOS Cloud is unreachable" in html
    cloud.start()


def test_a_cloud_that_cannot_reach_the_agent_is_told_with_its_status(cloud, support):
    task = a2a_task(cloud)
    cloud.fail(f"/v1/a2a/{AGENT}", 503, method="POST")
    html = fragment(support, task)
    assert "BeeOS Cloud could not reach the agent (HTTP 503)" in html


def test_an_agent_that_speaks_only_03_is_asked_with_the_03_alias(cloud, support):
    task = a2a_task(cloud)
    cloud.set_push_configs(task.task_id, CONFIGS)
    # The 1.0 name is unknown to this agent: -32601, then the 0.3 alias answers an array.
    cloud.a2a_error(-32601, "METHOD_NOT_FOUND", jsonrpc=True, pattern=f"/v1/a2a/{AGENT}")
    html = fragment(support, task)
    assert "pnc_with_token" in html and "Bearer" in html
    assert TOKEN not in html and CREDENTIALS not in html
    assert [c["method"] for c in rpc_calls(cloud)] == [
        "ListTaskPushNotificationConfigs",
        "tasks/pushNotification/list",
    ]


def test_a_non_a2a_task_says_so_and_has_no_button(cloud, support):
    task = make_task("running")
    html = fragment(support, task)
    assert "Only A2A tasks have push-notification settings" in html
    assert rpc_calls(cloud, task.agent_id) == []
    detail = support.get(object_url("tasks:detail", task.task_id, protocol=task.protocol))
    assert "Show push-notification settings" not in detail.content.decode()


def test_the_a2a_detail_page_offers_the_settings_on_demand(cloud, support):
    task = a2a_task(cloud)
    cloud.set_push_configs(task.task_id, CONFIGS)
    html = support.get(object_url("tasks:detail", task.task_id, protocol="a2a")).content.decode()
    assert "Show push-notification settings" in html
    url = push_url(task).replace("&", "&amp;")
    assert f'href="{url}"' in html and f'hx-get="{url}"' in html
    assert rpc_calls(cloud) == []  # nothing is read until asked


def test_support_can_read_and_anonymous_is_sent_to_login(cloud, client, support_user):
    task = a2a_task(cloud)
    response = client.get(push_url(task))
    assert response.status_code == 302 and "/login/" in response["Location"]
    assert rpc_calls(cloud) == []
    client.force_login(support_user)
    assert client.get(push_url(task)).status_code == 200


def test_an_unknown_task_is_404(cloud, support):
    response = support.get(object_url("task-push-config", "a2a_never_seen", show=1))
    assert response.status_code == 404


def test_a_hostile_id_stays_one_segment(cloud, support):
    hostile = "a2a/x?y=1#frag%2F ü"
    task = a2a_task(cloud, task_id=hostile)
    cloud.set_push_configs(task.task_id, CONFIGS[1:])
    url = push_url(task)
    assert url.startswith("/tasks/a2a%2Fx%3Fy%3D1%23frag%252F%20%C3%BC/push-config/")
    html = fragment(support, task)
    assert "pnc_plain" in html
    [call] = rpc_calls(cloud)
    assert call["params"]["taskId"] == hostile


def test_an_id_ending_in_push_config_opens_that_task(cloud, support):
    task = a2a_task(cloud, task_id="a2a_odd/push-config")
    response = support.get(object_url("tasks:detail", task.task_id, protocol="a2a"))
    assert response.status_code == 200
    assert "Show push-notification settings" in response.content.decode()
    assert rpc_calls(cloud) == []


def test_the_view_runs_a_fixed_number_of_queries(cloud, support):
    """Pinned here, not in query_counts.json: that harness runs without a stand-in Cloud."""
    small = a2a_task(cloud)
    big = a2a_task(cloud)
    cloud.set_push_configs(big.task_id, [{"id": f"p{i}", "url": "https://h"} for i in range(40)])
    counts = []
    for task in (small, big):
        with CaptureQueriesContext(connection) as ctx:
            fragment(support, task)
        counts.append(len(ctx.captured_queries))
    assert counts == [PUSH_VIEW_QUERIES] * 2
