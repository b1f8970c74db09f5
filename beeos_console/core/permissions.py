"""Role checks for HTML views: 403 with a plain message, never a silent redirect."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any, ClassVar

from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.utils.translation import gettext, gettext_lazy

from beeos_console.core import roles

ROLE_WORDS = {
    roles.SUPPORT: gettext_lazy("the support role"),
    roles.OPERATOR: gettext_lazy("the operator role"),
    roles.ADMIN: gettext_lazy("the admin role"),
    roles.FEEDER: gettext_lazy("the feeder (ingest) role"),
}


def deny(role: str) -> PermissionDenied:
    return PermissionDenied(
        gettext("This needs %(role)s. Ask an admin if you need it.") % {"role": ROLE_WORDS[role]}
    )


def role_required(role: str) -> Callable:
    def decorator(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
        @wraps(view)
        def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            if not roles.has_role(request.user, role):
                raise deny(role)
            return view(request, *args, **kwargs)

        return wrapped

    return decorator


class RoleRequiredMixin:
    required_role: ClassVar[str] = roles.SUPPORT

    def dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not roles.has_role(request.user, self.required_role):
            raise deny(self.required_role)
        return super().dispatch(request, *args, **kwargs)  # type: ignore[misc]
