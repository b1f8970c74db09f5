"""Password backends: Django's ModelBackend, loading the session's user with its roles.

``ConsoleModelBackend`` reads the user and the names of its groups (the console's
roles, ``core.roles``) in one query: a signed-in page makes no query of its own for
its role checks, and the roles are still read afresh on every request (a revoked
role is gone on the next one).

``PasswordLoginOffBackend`` when ``CONSOLE_PASSWORD_LOGIN=0``: sessions and
permissions as above, but no password is ever accepted (single sign-on only).
"""

from __future__ import annotations

from functools import cache
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.models import Group
from django.db import connection
from django.http import HttpRequest

from beeos_console.core import roles


@cache
def _user_with_roles_sql() -> str:
    """The user's row and ``ARRAY(SELECT name FROM its groups)``, by primary key.

    One statement, written out once: built by the ORM (an ``ArraySubquery``
    annotation) the same SQL cost twice as much on every request. Every name in
    it comes from the models; the only parameter is the user id.
    """
    user = get_user_model()._meta
    through = user.get_field("groups").remote_field.through._meta
    group = Group._meta
    q = connection.ops.quote_name
    return (
        f"SELECT u.*, ARRAY(SELECT g.{q(group.get_field('name').column)}"
        f" FROM {q(group.db_table)} g JOIN {q(through.db_table)} ug"
        f" ON g.{q(group.pk.column)} = ug.{q(through.get_field('group').column)}"
        f" WHERE ug.{q(through.get_field('user').column)} = u.{q(user.pk.column)})"
        f" AS {q(roles.ROLE_NAMES)}"
        f" FROM {q(user.db_table)} u WHERE u.{q(user.pk.column)} = %s"
    )


def user_with_roles(user_id: Any) -> Any | None:
    """The user ``user_id`` with its group names (``roles.ROLE_NAMES``), or None."""
    users = get_user_model()._default_manager.raw(_user_with_roles_sql(), [user_id])
    return next(iter(users), None)


class ConsoleModelBackend(ModelBackend):
    def get_user(self, user_id: Any) -> Any | None:
        # ModelBackend.get_user, with the roles in the same query.
        user = user_with_roles(user_id)
        return user if user is not None and self.user_can_authenticate(user) else None


class PasswordLoginOffBackend(ConsoleModelBackend):
    def authenticate(
        self,
        request: HttpRequest | None,
        username: str | None = None,
        password: str | None = None,
        **kwargs: Any,
    ) -> None:
        return None
