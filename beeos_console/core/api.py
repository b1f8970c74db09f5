"""REST building blocks shared by every app: role permissions and keyset pages."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db.models import QuerySet
from django.utils.translation import gettext, gettext_lazy
from rest_framework import permissions, status
from rest_framework.exceptions import APIException, ParseError, ValidationError
from rest_framework.pagination import BasePagination
from rest_framework.parsers import JSONParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.utils.urls import remove_query_param, replace_query_param

from beeos_console.core import jsonbody, roles
from beeos_console.core.pagination import PAGE_SIZE, BadCursor, paginate
from beeos_console.core.permissions import ROLE_WORDS


class HasRole(permissions.BasePermission):
    """Subclass with ``role``; the message says which role is missing."""

    role = roles.SUPPORT

    @property
    def message(self) -> str:  # type: ignore[override]
        return gettext("This needs %(role)s.") % {"role": ROLE_WORDS[self.role]}

    def has_permission(self, request: Request, view: Any) -> bool:
        return roles.has_role(request.user, self.role)


class IsSupport(HasRole):
    role = roles.SUPPORT


class IsOperator(HasRole):
    role = roles.OPERATOR


class IsAdmin(HasRole):
    role = roles.ADMIN


class IsFeeder(HasRole):
    role = roles.FEEDER


# Any storable id (DESIGN.md, Storage rules: ``/``, ``.``, any letter, up to 256
# characters). Links percent-encode it as one segment; the server decodes ``%2F``
# to ``/`` before routing, so the lookup takes everything up to the route's own
# ending — lazily: ``tasks/a/`` is the id ``a``, ``tasks/a%2F/`` the id ``a/``.
ID_LOOKUP = ".+?"


class IdLookupMixin:
    """A viewset whose detail and detail actions reach every storable id (``ID_LOOKUP``)."""

    lookup_value_regex = ID_LOOKUP
    # Handlers that answer GET on an action's route with the detail of ``<id>/<action>``.
    suffix_detail_handlers: tuple[str, ...] = ()

    def get_permissions(self) -> list[Any]:
        # The action's own permission (e.g. operator for cancel) is for its POST.
        if getattr(self, "action", None) in self.suffix_detail_handlers:
            return [permission() for permission in type(self).permission_classes]
        return super().get_permissions()  # type: ignore[misc]

    def retrieve_ending_in(self, request: Request, suffix: str) -> Response:
        """GET ``…/<id>/<suffix>``: the object whose id is ``<id>/<suffix>``."""
        self.action = "retrieve"
        lookup = self.lookup_url_kwarg or self.lookup_field  # type: ignore[attr-defined]
        self.kwargs[lookup] = f"{self.kwargs[lookup]}/{suffix}"  # type: ignore[attr-defined]
        return self.retrieve(request)  # type: ignore[attr-defined]


class PayloadTooLarge(APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_detail = gettext_lazy("The request body is too large.")
    default_code = "payload_too_large"


class JSONBodyParser(JSONParser):
    """DRF's JSON bodies through ``core.jsonbody``: at most ``DATA_UPLOAD_MAX_MEMORY_SIZE``
    bytes (413 above), nesting bounded, every malformed body a 400 — never a 5xx."""

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        if stream is None:
            body = b""
        elif limit is None:
            body = stream.read()
        else:
            body = stream.read(limit + 1)
            if len(body) > limit:
                raise PayloadTooLarge(
                    gettext("The body is over %(limit)s bytes; at most %(limit)s are accepted.")
                    % {"limit": limit}
                )
        try:
            return jsonbody.loads(body)
        except jsonbody.BadJSON as exc:
            raise ParseError(gettext("JSON parse error - %(error)s") % {"error": exc}) from exc


class KeysetPagination(BasePagination):
    """Cursor pages over (sort field, id), newest first; never counts.

    ``?after=<cursor>`` for older rows, ``?before=<cursor>`` for newer ones,
    ``?page_size=`` up to 200, ``?sort=`` one of the view's ``sort_fields``. A view with
    ``sort_order(sort) -> (field, ascending)`` (its HTML list's rule) may page a sort
    ascending, e.g. "longest stuck first".
    """

    max_page_size = 200

    def paginate_queryset(self, queryset: QuerySet, request: Request, view: Any = None) -> list:
        self.request = request
        sort_fields = getattr(view, "sort_fields", {"created": "created_at"})
        default = getattr(view, "default_sort", "created")
        # A saved view's parameters (``?view=``) under the given ones, when the filter set them.
        params = getattr(view, "list_params", None) or request.query_params
        sort = params.get("sort") or default
        if sort not in sort_fields:
            raise ValidationError(
                {
                    "sort": [
                        gettext("Choose one of: %(choices)s.") % {"choices": ", ".join(sort_fields)}
                    ]
                }
            )
        try:
            size = int(request.query_params.get("page_size", PAGE_SIZE))
        except ValueError as exc:
            raise ValidationError({"page_size": [gettext("Must be a whole number.")]}) from exc
        if not 1 <= size <= self.max_page_size:
            raise ValidationError(
                {"page_size": [gettext("Must be from 1 to %(max)s.") % {"max": self.max_page_size}]}
            )
        sort_order = getattr(view, "sort_order", None)
        field, ascending = sort_order(sort) if sort_order else (sort_fields[sort], False)
        try:
            self.page = paginate(
                queryset,
                field,
                after=request.query_params.get("after") or None,
                before=request.query_params.get("before") or None,
                page_size=size,
                count=False,
                ascending=ascending,
            )
        except BadCursor as exc:
            raise ValidationError({"cursor": [str(exc)]}) from exc
        return self.page.rows

    def _link(self, param: str, cursor: str | None) -> str | None:
        if not cursor:
            return None
        url = self.request.build_absolute_uri()
        url = remove_query_param(remove_query_param(url, "after"), "before")
        return replace_query_param(url, param, cursor)

    def get_paginated_response(self, data: list) -> Response:
        return Response(
            {
                "next": self._link("after", self.page.next_cursor),
                "previous": self._link("before", self.page.prev_cursor),
                "results": data,
            }
        )

    def get_schema_operation_parameters(self, view: Any) -> list[dict]:
        """The keyset parameters, for the OpenAPI schema (``/api/schema/``)."""
        sort_fields = getattr(view, "sort_fields", {"created": "created_at"})
        default = getattr(view, "default_sort", "created")
        sort_notes = getattr(view, "sort_notes", {})

        def param(name: str, description: str, schema: dict) -> dict:
            return {
                "name": name,
                "required": False,
                "in": "query",
                "description": description,
                "schema": schema,
            }

        return [
            param(
                "after",
                "Cursor of the next (older) page: the `next` link of the previous answer.",
                {"type": "string"},
            ),
            param(
                "before",
                "Cursor of the previous (newer) page: the `previous` link of an answer.",
                {"type": "string"},
            ),
            param(
                "page_size",
                f"Rows per page (default {PAGE_SIZE}).",
                {"type": "integer", "minimum": 1, "maximum": self.max_page_size},
            ),
            param(
                "sort",
                " ".join(
                    [
                        "The field pages are ordered on, newest first.",
                        *(f"`{name}`: {note}" for name, note in sort_notes.items()),
                    ]
                ),
                {"type": "string", "enum": list(sort_fields), "default": default},
            ),
        ]

    def get_paginated_response_schema(self, schema: dict) -> dict:
        return {
            "type": "object",
            "required": ["results"],
            "properties": {
                "next": {"type": "string", "nullable": True, "format": "uri"},
                "previous": {"type": "string", "nullable": True, "format": "uri"},
                "results": schema,
            },
        }
