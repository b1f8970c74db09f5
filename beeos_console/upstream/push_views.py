"""``/tasks/<id>/push-config/``: an A2A task's push-notification settings, read on demand.

Read-only (nothing changes, so nothing is audited). With htmx the fragment fills the
region on the task page; without JavaScript the link opens a page of its own.
"""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from beeos_console.core import roles
from beeos_console.core.permissions import role_required
from beeos_console.upstream.push_config import read_push_configs
from tasks import selectors
from tasks import states as task_states
from tasks import views as task_views

SUFFIX = "push-config"


@require_GET
@role_required(roles.SUPPORT)
def push_config_view(request: HttpRequest, task_id: str) -> HttpResponse:
    protocol = request.GET.get("protocol")
    if request.GET.get("show") != "1":
        # Ids may hold "/" (%2F, decoded by the server): the detail URL of an id ending in
        # "/push-config" reads as this route. Our own links say show=1.
        whole = f"{task_id}/{SUFFIX}"
        if selectors.tasks_by_id(whole, protocol=protocol):
            return task_views.task_detail(request, whole)
    candidates = selectors.tasks_by_id(task_id, protocol=protocol)
    if not candidates:
        raise Http404("No task with this id is mirrored.")
    # The same id may be mirrored under several protocols: the A2A one has the settings.
    task = next((t for t in candidates if t.protocol == task_states.A2A), candidates[0])
    context = {"task": task, "read": read_push_configs(task)}
    if getattr(request, "htmx", None):
        return render(request, "upstream/_push_config.html", context)
    return render(request, "upstream/push_config.html", context)
