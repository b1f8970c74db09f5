from __future__ import annotations

from typing import Any

from django.http import HttpRequest

from beeos_console.cancels.gateways import LocalGateway, upstream_configured
from beeos_console.core import roles


def console(request: HttpRequest) -> dict[str, Any]:
    """What every page shows in its frame: which gateway cancels go through."""
    configured = upstream_configured()  # the same test active_gateway() makes
    return {
        "gateway_name": "BeeOS" if configured else LocalGateway.label,
        "gateway_is_local": not configured,
        "is_admin_role": roles.has_role(request.user, roles.ADMIN),
        "is_operator_role": roles.has_role(request.user, roles.OPERATOR),
    }
