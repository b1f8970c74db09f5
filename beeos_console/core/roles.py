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


def user_roles(user: Any) -> set[str]:
    if not getattr(user, "is_authenticated", False):
        return set()
    cached = getattr(user, "_console_roles", None)
    if cached is None:
        cached = set(user.groups.values_list("name", flat=True))
        if user.is_superuser:
            cached |= {ADMIN}
        user._console_roles = cached
    return cached


def has_role(user: Any, role: str) -> bool:
    """True when the user holds ``role`` or a role that includes it."""
    return bool(user_roles(user) & _IMPLIED[role])
