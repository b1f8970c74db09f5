"""Saved view pages: save the current filter, open, list (the lists' menus), edit, delete."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django import forms
from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.translation import gettext, gettext_lazy
from django.views.decorators.http import require_http_methods, require_POST

from beeos_console.auditlog.services import Actor, record
from beeos_console.core import roles
from beeos_console.core.permissions import deny, role_required
from beeos_console.savedviews.models import (
    KINDS,
    MAX_QUERY,
    SavedView,
    clean_query,
    may_change,
    may_share,
)
from beeos_console.savedviews.services import change_view


class SaveViewForm(forms.Form):
    name = forms.CharField(max_length=100, strip=True)
    kind = forms.ChoiceField(choices=[(k, v.label) for k, v in KINDS.items()])
    query = forms.CharField(max_length=MAX_QUERY, required=False, strip=False)
    shared = forms.BooleanField(required=False)

    def clean_name(self) -> str:
        name = self.cleaned_data["name"]
        if "\x00" in name:
            raise forms.ValidationError(gettext("A name cannot hold a NUL character."))
        return name


class EditViewForm(forms.Form):
    """Rename a view, share or unshare it, and (``replace_query``) take new filters."""

    name = forms.CharField(label=gettext_lazy("Name"), max_length=100, strip=True)
    shared = forms.BooleanField(label=gettext_lazy("Share with the whole team"), required=False)
    replace_query = forms.BooleanField(
        label=gettext_lazy("Replace its filters with the list's current ones"), required=False
    )
    query = forms.CharField(
        max_length=MAX_QUERY, required=False, strip=False, widget=forms.HiddenInput
    )

    def clean_name(self) -> str:
        name = self.cleaned_data["name"]
        if "\x00" in name:
            raise forms.ValidationError(gettext("A name cannot hold a NUL character."))
        return name

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        if data.get("replace_query") and len(clean_query(data.get("query") or "")) > MAX_QUERY:
            raise forms.ValidationError(gettext("These filters are too long to save."))
        return data


@dataclass(frozen=True)
class Row:
    """One saved view as the list page and the menu show it, with what this user may do."""

    view: SavedView
    url: str
    may_delete: bool
    may_change: bool


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
            gettext("This view could not be saved: %(errors)s") % {"errors": dict(form.errors)},
            status=400,
            content_type="text/plain",
        )
    data = form.cleaned_data
    query = clean_query(data["query"])
    if len(query) > MAX_QUERY:
        return HttpResponse(
            gettext("These filters are too long to save."), status=400, content_type="text/plain"
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
        (
            gettext("Saved “%(name)s” for the whole team.")
            if view.shared
            else gettext("Saved “%(name)s” (only you see it).")
        )
        % {"name": view.name},
    )
    return redirect(list_url(view))


@role_required(roles.SUPPORT)
def saved_views(request: HttpRequest) -> HttpResponse:
    """The views this user may open (own and shared); ``?kind=`` one list's. htmx: the menu."""
    views = SavedView.objects.visible_to(request.user).select_related("owner")
    kind = request.GET.get("kind") or ""
    if kind:
        views = views.filter(kind=kind)
    rows = [row_of(request.user, v) for v in views]
    # ``?query=``: the filters of a list ("Update a saved view with these filters…"):
    # each view of that list this user may change offers to take them.
    offered = request.GET.get("query") if "query" in request.GET and kind else None
    context = {
        "rows": rows,
        "kind": kind,
        "kinds": KINDS,
        "may_share": may_share(request.user),
        "offered_query": clean_query(offered) if offered is not None else None,
    }
    if getattr(request, "htmx", None):
        return render(request, "savedviews/_menu.html", context)
    return render(request, "savedviews/list.html", context)


@role_required(roles.SUPPORT)
def open_view(request: HttpRequest, pk: int) -> HttpResponse:
    """Open a saved view: its list with exactly the saved filters."""
    view = SavedView.objects.visible_to(request.user).filter(pk=pk).first()
    if view is None:
        raise Http404(gettext("No saved view with this id is yours or shared."))
    return redirect(list_url(view))


@require_POST
@role_required(roles.SUPPORT)
def delete_view(request: HttpRequest, pk: int) -> HttpResponse:
    view = get_object_or_404(SavedView.objects.visible_to(request.user), pk=pk)
    if not may_change(request.user, view):
        raise PermissionDenied(gettext("Only its owner or an admin may change a shared view."))
    with transaction.atomic():
        if view.shared:
            _audit("saved_view.delete", view, request.user)
        view.delete()
    messages.success(request, gettext("Deleted the saved view “%(name)s”.") % {"name": view.name})
    return redirect(f"{reverse('saved-views:list')}?kind={view.kind}")


def row_of(user: Any, view: SavedView) -> Row:
    return Row(view, list_url(view), may_change(user, view), may_change(user, view))


@require_http_methods(["GET", "POST"])
@role_required(roles.SUPPORT)
def edit_view(request: HttpRequest, pk: int) -> HttpResponse:
    """Rename a saved view, share or unshare it, replace its filters (``?query=``).

    A page without JavaScript; from the saved views list, htmx swaps the view's
    row for this form and the saved row back in (``?row=1``: the row unchanged).
    """
    view = get_object_or_404(
        SavedView.objects.visible_to(request.user).select_related("owner"), pk=pk
    )
    if not may_change(request.user, view):
        raise PermissionDenied(gettext("Only its owner or an admin may change a shared view."))
    inline = bool(getattr(request, "htmx", None))
    if request.method == "GET" and inline and request.GET.get("row") == "1":
        return render(request, "savedviews/_row.html", {"row": row_of(request.user, view)})
    if request.method == "GET":
        offered = request.GET.get("query") if "query" in request.GET else None
        initial = {"name": view.name, "shared": view.shared}
        if offered is not None:
            initial.update(replace_query=True, query=clean_query(offered))
        return _edit_form(request, view, EditViewForm(initial=initial), offered is not None)
    form = EditViewForm(request.POST)
    if not form.is_valid():
        return _edit_form(request, view, form, "query" in request.POST, status=400)
    data = form.cleaned_data
    query = data["query"] if data["replace_query"] else None
    try:
        view, changed = change_view(
            request.user, view.pk, name=data["name"], shared=data["shared"], query=query
        )
    except SavedView.DoesNotExist as exc:  # deleted meanwhile
        raise Http404(gettext("No saved view with this id is yours or shared.")) from exc
    note = (
        gettext("Saved “%(name)s”.") if changed else gettext("Nothing changed in “%(name)s”.")
    ) % {"name": view.name}
    if inline:
        context = {"row": row_of(request.user, view), "note": note}
        return render(request, "savedviews/_row.html", context)
    messages.success(request, note)
    return redirect(f"{reverse('saved-views:list')}?kind={view.kind}")


def _edit_form(
    request: HttpRequest, view: SavedView, form: EditViewForm, offered: bool, status: int = 200
) -> HttpResponse:
    context = {
        "view": view,
        "form": form,
        "url": list_url(view),
        # The checkbox shows when the user may share, or to unshare a shared view.
        "show_shared": may_share(request.user) or view.shared,
        "offered": offered,
        "offered_query": form["query"].value() or "",
    }
    # Inline (htmx), the form takes the focus; a page keeps it at the top (skip link).
    context["inline"] = bool(getattr(request, "htmx", None))
    template = "savedviews/_edit_row.html" if context["inline"] else "savedviews/edit.html"
    return render(request, template, context, status=status)
