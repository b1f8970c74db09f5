"""Fuzz our own REST API from its own OpenAPI schema: whatever comes in, never a 5xx.

schemathesis generates requests (valid and invalid) for every operation in the
schema drf-spectacular serves at /api/schema/ and sends them in-process to the
WSGI app, authenticated as a user holding every role.
"""

from __future__ import annotations

import json
import os

import pytest
import schemathesis
from django.contrib.auth.models import Group
from django.core import signals
from django.db import close_old_connections
from drf_spectacular.generators import SchemaGenerator
from drf_spectacular.renderers import OpenApiJsonRenderer
from hypothesis import HealthCheck, settings

from beeos_console.core import tokens
from beeos_console.wsgi import application

_generated = SchemaGenerator().get_schema(request=None, public=True)
schema = schemathesis.openapi.from_dict(json.loads(OpenApiJsonRenderer().render(_generated)))
schema.app = application


@pytest.fixture
def in_process_requests():
    """Like Django's test client: a finished request must not close the test's connection."""
    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    yield
    signals.request_started.connect(close_old_connections)
    signals.request_finished.connect(close_old_connections)


@pytest.fixture
def auth_headers(django_user_model, in_process_requests) -> dict[str, str]:
    user, _ = django_user_model.objects.get_or_create(username="fuzz-everything")
    for role in ("support", "operator", "admin", "feeder"):
        user.groups.add(Group.objects.get_or_create(name=role)[0])
    _, key = tokens.issue(user, "fuzz")
    return {"Authorization": f"Bearer {key}"}


@pytest.mark.django_db
@schema.parametrize()
@settings(
    max_examples=int(os.environ.get("FUZZ_EXAMPLES", "25")),
    # CI replays the same examples; explore with FUZZ_EXAMPLES=500.
    derandomize=not os.environ.get("FUZZ_EXAMPLES"),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
def test_no_request_makes_the_api_fail(case, auth_headers):
    response = case.call(headers=auth_headers)
    assert response.status_code < 500, f"{case.method} {case.formatted_path}: {response.text[:500]}"
