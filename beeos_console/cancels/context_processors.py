from __future__ import annotations

from typing import Any

from django.contrib.auth.models import AnonymousUser
from django.http import HttpRequest

from beeos_console.cancels.gateways import LocalGateway, upstream_configured
from beeos_console.core import roles


def console(request: HttpRequest) -> dict[str, Any]:
    """What every page shows in its frame: which gateway cancels go through."""
    configured = upstream_configured()  # the same test active_gateway() makes
    # No user on a request refused before authentication (e.g. a 400 for a bad host).
    user = getattr(request, "user", None) or AnonymousUser()
    return {
        "gateway_name": "BeeOS" if configured else str(LocalGateway.label),
        "gateway_is_local": not configured,
        "is_admin_role": roles.has_role(user, roles.ADMIN),
        "is_operator_role": roles.has_role(user, roles.OPERATOR),
    }
