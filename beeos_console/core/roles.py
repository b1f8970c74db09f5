"""The console's roles: Django groups created by a data migration.

support  - read everything but the audit pages
operator - support + cancel tasks and runtime operations
admin    - everything, including the audit pages
feeder   - a service account that may call the ingest API (no UI)
"""

from __future__ import annotations

from typing import Any, Final

SUPPORT: Final = "support"
OPERATOR: Final = "operator"
ADMIN: Final = "admin"
FEEDER: Final = "feeder"
ROLES: Final = (SUPPORT, OPERATOR, ADMIN, FEEDER)

# Which roles include which (admin includes operator includes support).
_IMPLIED: Final = {
    SUPPORT: {SUPPORT, OPERATOR, ADMIN},
    OPERATOR: {OPERATOR, ADMIN},
    ADMIN: {ADMIN},
    FEEDER: {FEEDER},
}


# Where a user loaded with its group names (``accounts.backends``: one query for both)
# holds them; ``user_roles`` then makes no query of its own.
ROLE_NAMES: Final = "_console_role_names"


def _roles(user: Any, names: Any) -> set[str]:
    roles = set(names)
    if user.is_superuser:
        roles |= {ADMIN}
    return roles


def user_roles(user: Any) -> set[str]:
    """The user's roles, read once per user object (one request) and never kept longer."""
    if not getattr(user, "is_authenticated", False):
        return set()
    cached = getattr(user, "_console_roles", None)
    if cached is None:
        names = getattr(user, ROLE_NAMES, None)
        if names is None:
            names = user.groups.values_list("name", flat=True)
        cached = user._console_roles = _roles(user, names)
    return cached


def forget_roles(user: Any) -> None:
    """After a change of the user's groups: the next check reads them again."""
    for name in ("_console_roles", ROLE_NAMES):
        if hasattr(user, name):
            delattr(user, name)


def has_role(user: Any, role: str) -> bool:
    """True when the user holds ``role`` or a role that includes it."""
    return bool(user_roles(user) & _IMPLIED[role])
