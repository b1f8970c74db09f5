"""``/search/?q=…`` (a page; an htmx dropdown for the header box) and ``/api/v1/search/?q=…``."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from beeos_console.core import roles
from beeos_console.core.permissions import role_required
from beeos_console.search import selectors
from beeos_console.search.query import MAX_QUERY, clean


@role_required(roles.SUPPORT)
def search_page(request: HttpRequest) -> HttpResponse:
    """Grouped results; one object found by id or URL opens directly (a redirect).

    An htmx request from the header box gets the dropdown fragment instead,
    and never a redirect: the box's own submit (Enter) comes here as a page.
    """
    text = clean(request.GET.get("q"))
    results = selectors.search(text)
    context = {"results": results, "search_q": text}
    if getattr(request, "htmx", None) and not request.htmx.boosted:
        return render(request, "search/_dropdown.html", context)
    if results.single is not None:
        return redirect(results.single.url)
    return render(request, "search/page.html", context)


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
            )
        ],
        responses={200: OpenApiTypes.OBJECT},
    )
    def get(self, request: Request) -> Response:
        return Response(selectors.search(clean(request.query_params.get("q"))).as_json())
