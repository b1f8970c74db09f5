"""Saved view pages: save the current filter, open, list (the lists' menus), delete."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.db import transaction
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from beeos_console.auditlog.services import Actor, record
from beeos_console.core import roles
from beeos_console.core.permissions import deny, role_required
from beeos_console.savedviews.models import (
    KINDS,
    MAX_QUERY,
    SavedView,
    clean_query,
    may_edit,
    may_share,
)


class SaveViewForm(forms.Form):
    name = forms.CharField(max_length=100, strip=True)
    kind = forms.ChoiceField(choices=[(k, v.label) for k, v in KINDS.items()])
    query = forms.CharField(max_length=MAX_QUERY, required=False, strip=False)
    shared = forms.BooleanField(required=False)

    def clean_name(self) -> str:
        name = self.cleaned_data["name"]
        if "\x00" in name:
            raise forms.ValidationError("A name cannot hold a NUL character.")
        return name


def list_url(view: SavedView) -> str:
    url = reverse(view.list_kind.url_name)
    return f"{url}?{view.query}" if view.query else url


def _audit(action: str, view: SavedView, user) -> None:
    """Shared views are audited (created, deleted); private ones are their owner's business."""
    record(
        Actor.of_user(user),
        action,
        "saved_view",
        str(view.pk),
        detail={"name": view.name, "kind": view.kind, "query": view.query},
    )


@require_POST
@role_required(roles.SUPPORT)
def save_view(request: HttpRequest) -> HttpResponse:
    """Save the current filter of a list under a name; shared needs the operator role."""
    form = SaveViewForm(request.POST)
    if not form.is_valid():
        return HttpResponse(
            f"This view could not be saved: {dict(form.errors)}",
            status=400,
            content_type="text/plain",
        )
    data = form.cleaned_data
    query = clean_query(data["query"])
    if len(query) > MAX_QUERY:
        return HttpResponse(
            "These filters are too long to save.", status=400, content_type="text/plain"
        )
    kind = KINDS[data["kind"]]
    if not roles.has_role(request.user, kind.role):
        raise deny(kind.role)
    if data["shared"] and not may_share(request.user):
        raise deny(roles.OPERATOR)
    with transaction.atomic():
        view = SavedView.objects.create(
            owner=request.user,
            name=data["name"],
            kind=data["kind"],
            query=query,
            shared=data["shared"],
        )
        if view.shared:
            _audit("saved_view.create", view, request.user)
    messages.success(
        request,
        f"Saved “{view.name}”" + (" for the whole team." if view.shared else " (only you see it)."),
    )
    return redirect(list_url(view))


@role_required(roles.SUPPORT)
def saved_views(request: HttpRequest) -> HttpResponse:
    """The views this user may open (own and shared); ``?kind=`` one list's. htmx: the menu."""
    views = SavedView.objects.visible_to(request.user).select_related("owner")
    kind = request.GET.get("kind") or ""
    if kind:
        views = views.filter(kind=kind)
    rows = [(v, list_url(v), may_edit(request.user, v)) for v in views]
    context = {"rows": rows, "kind": kind, "kinds": KINDS, "may_share": may_share(request.user)}
    if getattr(request, "htmx", None):
        return render(request, "savedviews/_menu.html", context)
    return render(request, "savedviews/list.html", context)


@role_required(roles.SUPPORT)
def open_view(request: HttpRequest, pk: int) -> HttpResponse:
    """Open a saved view: its list with exactly the saved filters."""
    view = SavedView.objects.visible_to(request.user).filter(pk=pk).first()
    if view is None:
        raise Http404("No saved view with this id is yours or shared.")
    return redirect(list_url(view))


@require_POST
@role_required(roles.SUPPORT)
def delete_view(request: HttpRequest, pk: int) -> HttpResponse:
    view = get_object_or_404(SavedView.objects.visible_to(request.user), pk=pk)
    if not may_edit(request.user, view):
        raise deny(roles.OPERATOR)
    with transaction.atomic():
        if view.shared:
            _audit("saved_view.delete", view, request.user)
        view.delete()
    messages.success(request, f"Deleted the saved view “{view.name}”.")
    return redirect(f"{reverse('saved-views:list')}?kind={view.kind}")
