from __future__ import annotations

from typing import Any

from django.conf import settings
from django.http import HttpRequest

from . import roles


def console(request: HttpRequest) -> dict[str, Any]:
    """What every page shows in its frame: which gateway cancels go through."""
    upstream = bool(settings.BEEOS_API_URL)
    return {
        "gateway_name": "BeeOS" if upstream else "Local (demo)",
        "gateway_is_local": not upstream,
        "is_admin_role": roles.has_role(request.user, roles.ADMIN),
        "is_operator_role": roles.has_role(request.user, roles.OPERATOR),
    }
