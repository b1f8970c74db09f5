"""Shared fixtures. The suite runs on PostgreSQL (DATABASE_URL); SQLite is refused."""

from __future__ import annotations

import os

import pytest
from django.conf import settings
from django.contrib.auth.models import Group
from django.utils import translation

from beeos_console.auditlog.services import Actor
from beeos_console.core import roles


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups (it runs in the same hook)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """`make test` spreads the tests over workers (pytest-xdist, ``--dist loadgroup``).
    Tests that share a module- or class-scoped fixture of the suite's own (a started
    server, a seeded database, a TestCase's class data) form one group and run on one
    worker, so the fixture is set up once, not once per worker, and two workers never
    start the same server or database. (Plugins' fixtures have no ``baseid``.)"""
    for item in items:
        shared = {
            fixture.scope
            for fixtures in item._fixtureinfo.name2fixturedefs.values()
            for fixture in fixtures
            if fixture.baseid
        }
        if "module" in shared:
            item.add_marker(pytest.mark.xdist_group(item.module.__name__))
        elif "class" in shared and item.cls is not None:
            item.add_marker(pytest.mark.xdist_group(f"{item.module.__name__}.{item.cls.__name__}"))


def pytest_runtest_setup(item: pytest.Item) -> None:
    """Refuse, loudly, a test that is not a browser test once Playwright runs in this
    process (tests/browser/conftest.py turns async safety off meanwhile): it would run
    beside Playwright's asyncio loop. `make test` keeps each xdist worker's tests in
    collection order (``--no-loadscope-reorder``), which puts the browser tests last."""
    if os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE") and item.get_closest_marker("browser") is None:
        pytest.fail(f"{item.nodeid} runs with DJANGO_ALLOW_ASYNC_UNSAFE set (after Playwright?)")


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup, django_db_blocker):  # noqa: F811 - extends pytest-django's
    """Database tests run on PostgreSQL only: SQLite hides locking and JSON behaviour."""
    from django.db import connection

    if connection.vendor != "postgresql" and not os.environ.get("CONSOLE_ALLOW_NON_POSTGRES_TESTS"):
        pytest.exit("Database tests need PostgreSQL: set DATABASE_URL=postgres://...", returncode=2)
    yield


@pytest.fixture(autouse=True)
def _language_of_the_test_only():
    """A request's language (LocaleMiddleware) stays active in the thread after it answers:
    each test starts in the default language and leaves no other behind."""
    translation.activate(settings.LANGUAGE_CODE)
    yield
    translation.activate(settings.LANGUAGE_CODE)


@pytest.fixture
def feeder() -> Actor:
    return Actor.feeder("feeder-test")


def user_with_role(django_user_model, username: str, role: str, **extra):
    """A user in one role's group, with the password ``pw-<username>``."""
    user = django_user_model.objects.create_user(
        username=username, password="pw-" + username, **extra
    )
    # get_or_create: a transactional test's flush removes the migration's rows.
    user.groups.add(Group.objects.get_or_create(name=role)[0])
    return user


@pytest.fixture
def support_user(db, django_user_model):
    return user_with_role(django_user_model, "sam-support", roles.SUPPORT)


@pytest.fixture
def operator_user(db, django_user_model):
    return user_with_role(django_user_model, "olga-operator", roles.OPERATOR)


@pytest.fixture
def admin_user(db, django_user_model):
    return user_with_role(
        django_user_model, "ada-admin", roles.ADMIN, is_superuser=True, is_staff=True
    )
