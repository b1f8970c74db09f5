"""Every list and detail view runs a fixed number of SQL queries, pinned here.

The counts live in ``tests/query_counts.json`` (as NetBox does). Each view is
measured twice, on a small and on a larger data set: the two must agree (no
N+1) and match the pinned number. Run with ``UPDATE_QUERY_COUNTS=1`` after an
intended change to rewrite the file. No query may ``COUNT`` an unbounded set.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from beeos_console.core import roles

from .conftest import user_with_role
from .factories import make_a2a_task, make_event, make_message, make_operation, make_task
from .shared_db import rolled_back_at_end

pytestmark = pytest.mark.django_db

PINNED_FILE = Path(__file__).with_name("query_counts.json")
PINNED = json.loads(PINNED_FILE.read_text())


def populate(scale: int) -> dict[str, str]:
    """``scale`` tasks with messages, operations with events; returns detail URLs."""
    task = op = None
    for i in range(scale):
        task = make_task(["running", "failed", "timeout", "completed"][i % 4], minutes_ago=i)
        make_a2a_task(
            "TASK_STATE_COMPLETED",
            artifacts=[{"artifactId": f"art-{i}", "parts": [{"text": "x"}]}],
            history=[{"messageId": f"h-{scale}-{i}", "role": "user", "parts": [{"text": "q"}]}],
        )
        for _ in range(3):
            make_message(task, body=f"reply {i}")
        op = make_operation(["outcome_unknown", "running", "failed"][i % 3])
        for seq in range(1, 4):
            make_event(op, seq)
    return {
        "tasks:detail": f"/tasks/{task.task_id}/",
        "operations:detail": f"/operations/{op.operation_id}/",
    }


VIEWS = {
    "dashboard": "/",
    "tasks:list": "/tasks/",
    "tasks:list:filtered": "/tasks/?status=failed&status=processing&protocol=openapi&stuck=5&q=tsk",
    "tasks:list:htmx": "/tasks/?status=failed",
    "tasks:detail": None,
    "tasks:messages": "/messages/?state=completed",
    "operations:list": "/operations/?raw_status=outcome_unknown&raw_status=running",
    "operations:detail": None,
    "audit:log": "/audit/log/",
    # The search box: id fragments (every group), words (full text), the dropdown, the API.
    "search:fragment": "/search/?q=Qm8ZpL2x",
    "search:text": "/search/?q=reply",
    "search:htmx": "/search/?q=Qm8ZpL2x",
    "search:api": "/api/v1/search/?q=reply",
}


def measure(client, name: str, url: str) -> int:
    headers = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "results"} if "htmx" in name else {}
    with CaptureQueriesContext(connection) as ctx:
        response = client.get(url, **headers)
    assert response.status_code == 200, (name, response.status_code)
    for query in ctx.captured_queries:
        sql = query["sql"].upper()
        if "COUNT(" in sql:
            assert "LIMIT" in sql, f"{name} counts an unbounded set: {query['sql']}"
    return len(ctx.captured_queries)


@pytest.fixture(scope="module")
def measured(django_db_setup, django_db_blocker) -> dict[str, list[int] | str]:
    """Every view measured on the small data set, then on the larger one: the data are
    built once for all views (``shared_db``), not once a view. A view that fails to
    answer is recorded as its error, for its own test to report."""
    results: dict[str, list[int] | str] = {name: [] for name in VIEWS}
    with rolled_back_at_end(django_db_blocker):
        admin = user_with_role(
            get_user_model(), "ada-admin", roles.ADMIN, is_superuser=True, is_staff=True
        )
        client = Client()
        client.force_login(admin)
        for scale in (2, 25):
            urls = populate(scale)
            for name, url in VIEWS.items():
                if isinstance(results[name], list):
                    try:
                        results[name].append(measure(client, name, url or urls[name]))
                    except AssertionError as failure:
                        results[name] = f"{failure!r}"
    return results


@pytest.mark.parametrize("name", list(VIEWS))
def test_query_count_is_fixed_and_pinned(measured, name):
    assert not isinstance(measured[name], str), measured[name]
    small, big = measured[name]
    assert small == big, f"{name}: {small} queries on 2 rows, {big} on 25+ (an N+1)"
    if os.environ.get("UPDATE_QUERY_COUNTS"):
        pinned = json.loads(PINNED_FILE.read_text())
        pinned[name] = big
        PINNED_FILE.write_text(json.dumps(pinned, indent=2, sort_keys=True) + "\n")
        return
    assert PINNED.get(name) == big, (
        f"{name} runs {big} queries, pinned {PINNED.get(name)}; "
        "if intended, rerun with UPDATE_QUERY_COUNTS=1"
    )
