"""``/search/?q=…`` (a page; an htmx dropdown for the header box) and ``/api/v1/search/?q=…``."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from beeos_console.core import roles
from beeos_console.core.pagination import BadCursor
from beeos_console.core.permissions import role_required
from beeos_console.search import selectors
from beeos_console.search.query import MAX_QUERY, clean


@role_required(roles.SUPPORT)
def search_page(request: HttpRequest) -> HttpResponse:
    """Grouped results; one object found by id or URL opens directly (a redirect).

    An htmx request from the header box gets the dropdown fragment instead,
    and never a redirect: the box's own submit (Enter) comes here as a page.
    ``?more=<group>&after=<cursor>``: the next page of one group (the URL holds
    the whole state; a forged cursor or an unknown group is a 400).
    """
    text = clean(request.GET.get("q"))
    if getattr(request, "htmx", None) and not request.htmx.boosted:
        context = {"results": selectors.search(text), "search_q": text}
        return render(request, "search/_dropdown.html", context)
    more = request.GET.get("more") or ""
    status = 200
    try:
        results = selectors.search(text, more=more, after=request.GET.get("after") or None)
    except BadCursor as exc:
        messages.warning(request, str(exc))
        results, status = selectors.search(text, more=more), 400
    except ValueError:
        messages.warning(request, gettext("There is no such group of results; showing them all."))
        results, status = selectors.search(text), 400
    if status == 200 and results.single is not None:
        return redirect(results.single.url)
    context = {"results": results, "search_q": text}
    return render(request, "search/page.html", context, status=status)


class SearchApiView(APIView):
    """The header box's search as JSON groups (support role and up, session or token)."""

    @extend_schema(
        parameters=[
            OpenApiParameter(
                "q",
                OpenApiTypes.STR,
                description=(
                    "An id or any fragment of one (3+ characters), a console or BeeOS URL, "
                    f"or words (full text). At most {MAX_QUERY} characters are used."
                ),
            ),
            OpenApiParameter(
                "more",
                OpenApiTypes.STR,
                enum=list(selectors.PAGED_GROUPS),
                description="Only this group, from `after` on: its next page.",
            ),
            OpenApiParameter(
                "after",
                OpenApiTypes.STR,
                description="With `more`: the group's `next_cursor` from the previous answer.",
            ),
        ],
        responses={200: OpenApiTypes.OBJECT},
    )
    def get(self, request: Request) -> Response:
        params = request.query_params
        try:
            results = selectors.search(
                clean(params.get("q")),
                more=params.get("more") or "",
                after=params.get("after") or None,
            )
        except BadCursor as exc:
            raise ValidationError({"after": [str(exc)]}) from exc
        except ValueError as exc:
            raise ValidationError(
                {
                    "more": [
                        gettext("Choose one of: %(choices)s.")
                        % {"choices": ", ".join(selectors.PAGED_GROUPS)}
                    ]
                }
            ) from exc
        return Response(results.as_json())
