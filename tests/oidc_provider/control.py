"""Test-only control endpoints of the provider (a shared token in ``X-Test-Token``):
seed users and their groups, register the console as a client, count a user's live
provider sessions."""

from __future__ import annotations

import hmac
import json
import os
from collections.abc import Callable
from typing import Any

from django.contrib.auth.models import Group, User
from django.contrib.sessions.models import Session
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils import timezone
from django.views.decorators.csrf import csrf_exempt
from oauth2_provider.models import Application

from tests.oidc_provider.validator import subject_of


def guarded(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    @csrf_exempt
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        token = request.headers.get("X-Test-Token", "")
        if not hmac.compare_digest(token, os.environ["IDP_CONTROL_TOKEN"]):
            return JsonResponse({"detail": "forbidden"}, status=403)
        return view(request, *args, **kwargs)

    return wrapped


@guarded
def users(request: HttpRequest) -> HttpResponse:
    data = json.loads(request.body)
    user, _ = User.objects.get_or_create(username=data["username"])
    if "password" in data:
        user.set_password(data["password"])
    for field in ("email", "first_name", "last_name"):
        if field in data:
            setattr(user, field, data[field])
    user.save()
    if "groups" in data:
        user.groups.set([Group.objects.get_or_create(name=name)[0] for name in data["groups"]])
    return JsonResponse({"username": user.username, "sub": subject_of(user)})


@guarded
def clients(request: HttpRequest) -> HttpResponse:
    data = json.loads(request.body)
    app = Application.objects.filter(client_id=data["client_id"]).first() or Application(
        client_id=data["client_id"]
    )
    app.name = data.get("name", "BeeOS Operator Console")
    app.client_secret = data["client_secret"]  # hashed when saved
    app.client_type = Application.CLIENT_CONFIDENTIAL
    app.authorization_grant_type = Application.GRANT_AUTHORIZATION_CODE
    app.algorithm = Application.RS256_ALGORITHM
    app.redirect_uris = " ".join(data["redirect_uris"])
    app.post_logout_redirect_uris = " ".join(data.get("post_logout_redirect_uris", []))
    app.skip_authorization = True  # no consent page: the console is a trusted client
    app.save()
    return JsonResponse({"client_id": app.client_id})


@guarded
def sessions(request: HttpRequest, username: str) -> HttpResponse:
    user = User.objects.get(username=username)
    live = Session.objects.filter(expire_date__gt=timezone.now())
    count = sum(1 for s in live if s.get_decoded().get("_auth_user_id") == str(user.pk))
    return JsonResponse({"sessions": count})
