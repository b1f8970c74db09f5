"""The console's API router (kept apart from ``core.api``: DRF settings import that)."""

from __future__ import annotations

from rest_framework import routers


class IdRouter(routers.DefaultRouter):
    """The console's API router: detail actions before the detail route.

    With ``core.api.ID_LOOKUP`` the detail route ``tasks/<id>/`` would also match
    ``tasks/<id>/cancel`` (as the id ``<id>/cancel``): ``POST …/cancel`` must
    reach the cancel action. A viewset whose ids may end in ``/cancel`` maps
    GET on that route to the detail (``IdLookupMixin.retrieve_ending_in``).
    """

    routes = [
        *routers.SimpleRouter.routes[:2],
        routers.SimpleRouter.routes[3],  # DynamicRoute(detail=True): …/<id>/<action>
        routers.SimpleRouter.routes[2],  # Route: …/<id>
        *routers.SimpleRouter.routes[4:],
    ]
