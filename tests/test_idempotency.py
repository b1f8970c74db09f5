"""An Idempotency-Key means one request: one user, one object, one action, one body.

Over real HTTP to the stand-in BeeOS, on PostgreSQL; the concurrent case uses
real concurrent connections.
"""

from __future__ import annotations

import threading

import pytest
from django.contrib.auth.models import Group
from django.db import connection
from rest_framework.test import APIClient

from beeos_console.auditlog.models import AuditEntry
from beeos_console.cancels.models import CancelRequest
from beeos_console.core import tokens
from tests.standin import BeeOSStandIn

from .factories import make_task
from .test_cancel_beeos import CLOUD_KEY, KEY, OLGA, TASK_CANCEL, cancel, make_gateway, task_pair


@pytest.fixture
def api(operator_user) -> APIClient:
    _, key = tokens.issue(operator_user)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    return client


def post_cancel(api: APIClient, task, reason: str, key: str):
    return api.post(
        f"/api/v1/tasks/{task.task_id}/cancel",
        {"reason": reason},
        format="json",
        HTTP_IDEMPOTENCY_KEY=key,
    )


@pytest.mark.django_db
class TestOneKeyOneRequest:
    def test_the_same_request_again_is_replayed(self, api):
        task = make_task("running")
        first = post_cancel(api, task, "stuck", "idem-1")
        again = post_cancel(api, task, "stuck", "idem-1")
        assert (first.status_code, again.status_code) == (200, 200)
        assert again.json()["replayed"] is True
        assert AuditEntry.objects.filter(action="task.cancel").count() == 1

    def test_another_body_with_the_same_key_is_422_and_changes_nothing(self, api):
        running = make_task("running")
        assert post_cancel(api, running, "stuck", "idem-2").status_code == 200
        entries = AuditEntry.objects.count()
        response = post_cancel(api, running, "a different reason", "idem-2")
        assert response.status_code == 422
        body = response.json()
        assert body["code"] == "idempotency_key_reused" and "reason" in body["detail"]
        assert CancelRequest.objects.count() == 1 and AuditEntry.objects.count() == entries

    def test_another_object_with_the_same_key_is_422_and_left_alone(self, api):
        first, second = make_task("running"), make_task("running")
        assert post_cancel(api, first, "stuck", "idem-3").status_code == 200
        response = post_cancel(api, second, "stuck", "idem-3")
        assert response.status_code == 422 and "another object" in response.json()["detail"]
        second.refresh_from_db()
        assert second.status == "processing"

    def test_another_user_with_the_same_key_is_422(self, api, django_user_model):
        other = django_user_model.objects.create_user("omar-operator")
        other.groups.add(Group.objects.get_or_create(name="operator")[0])
        _, key = tokens.issue(other)
        omar = APIClient()
        omar.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
        task = make_task("running")
        assert post_cancel(api, task, "stuck", "idem-4").status_code == 200
        response = post_cancel(omar, task, "stuck", "idem-4")
        assert response.status_code == 422 and "another user" in response.json()["detail"]


@pytest.mark.django_db(transaction=True)
def test_the_same_key_sent_concurrently_answers_everyone_with_the_first_answer():
    with BeeOSStandIn(api_key=KEY, cloud_api_key=CLOUD_KEY) as standin:
        task = task_pair(standin, upstream_status="running", mirror_status="running")
        standin.delay(TASK_CANCEL, 0.5, method="POST")
        barrier = threading.Barrier(3)
        outcomes, errors = [], []

        def worker() -> None:
            gateway = make_gateway(standin)
            try:
                barrier.wait(timeout=5)
                outcomes.append(
                    cancel(task, gateway, actor=OLGA, reason="stuck", idempotency_key="same")
                )
            except BaseException as exc:  # noqa: BLE001 - reported by the test
                errors.append(exc)
            finally:
                gateway.client.rest_client.pool_manager.clear()
                connection.close()

        threads = [threading.Thread(target=worker) for _ in range(3)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=20)
        assert errors == [] and len(outcomes) == 3
        # Every caller gets the first request's answer, not "in flight".
        assert {o.result for o in outcomes} == {"cancel_requested"} or {
            o.result for o in outcomes
        } == {"cancelled"}
        assert sorted(o.replayed for o in outcomes) == [False, True, True]
        assert len(standin.requests_to("POST", TASK_CANCEL)) == 1
        assert AuditEntry.objects.filter(action="task.cancel").count() == 1
        assert CancelRequest.objects.count() == 1
