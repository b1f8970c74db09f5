"""Shared fixtures. The suite runs on PostgreSQL (DATABASE_URL); SQLite is refused."""

from __future__ import annotations

import os

import pytest
from django.conf import settings
from django.contrib.auth.models import Group
from django.utils import translation

from beeos_console.auditlog.services import Actor
from beeos_console.core import roles


def pytest_configure(config: pytest.Config) -> None:
    """A fast password hasher: the suite creates many users, none needs a slow hash."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


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


def _user(django_user_model, username: str, role: str, **extra):
    user = django_user_model.objects.create_user(
        username=username, password="pw-" + username, **extra
    )
    # get_or_create: a transactional test's flush removes the migration's rows.
    user.groups.add(Group.objects.get_or_create(name=role)[0])
    return user


@pytest.fixture
def support_user(db, django_user_model):
    return _user(django_user_model, "sam-support", roles.SUPPORT)


@pytest.fixture
def operator_user(db, django_user_model):
    return _user(django_user_model, "olga-operator", roles.OPERATOR)


@pytest.fixture
def admin_user(db, django_user_model):
    return _user(django_user_model, "ada-admin", roles.ADMIN, is_superuser=True, is_staff=True)
