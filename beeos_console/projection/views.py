"""The projection audit pages (admin role): the report, its jobs, re-projecting one object."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext
from django.views.decorators.http import require_http_methods, require_POST

from beeos_console.auditlog.services import Actor
from beeos_console.core import roles
from beeos_console.core.permissions import role_required
from beeos_console.core.redirects import safe_next
from beeos_console.mirror import registry
from beeos_console.mirror.states import PROJECTION_VERSION
from beeos_console.projection import reprojection, selectors
from beeos_console.projection.audit import FAILING, INFORMATIONAL
from beeos_console.projection.models import ProjectionJob


@role_required(roles.ADMIN)
def projection_audit_view(request: HttpRequest) -> HttpResponse:
    latest_audit = selectors.latest_finished_job(ProjectionJob.Kind.AUDIT)
    report = latest_audit.report if latest_audit else None
    context = {
        "latest_audit": latest_audit,
        "report": report,
        "summary": _summary_rows(report) if report else [],
        "running": selectors.running_jobs(),
        "recent": selectors.recent_jobs(),
        "live_unmapped": selectors.live_unmapped(),
        "outdated": selectors.outdated_counts(),
        "projection_version": PROJECTION_VERSION,
        "latest_dry_run": selectors.latest_finished_job(ProjectionJob.Kind.DRY_RUN),
    }
    return render(request, "audit/projections.html", context)


def _summary_rows(report: dict[str, Any]) -> list[dict[str, Any]]:
    categories = report.get("categories", {})
    rows = []
    for name, label in (*FAILING.items(), *INFORMATIONAL.items()):
        data = categories.get(name, {"count": 0, "examples": []})
        rows.append(
            {
                "name": name,
                "label": label,
                "failing": name in FAILING,
                "count": data["count"],
                "examples": data["examples"],
            }
        )
    return rows


@require_POST
@role_required(roles.ADMIN)
def projection_job_start(request: HttpRequest) -> HttpResponse:
    kind = request.POST.get("kind", "")
    if kind not in ProjectionJob.Kind.values:
        messages.error(request, gettext("Unknown job."))
        return redirect("audit:projections")
    if kind == ProjectionJob.Kind.REPROJECT and request.POST.get("confirm") != "reproject":
        messages.error(
            request, gettext("Re-projecting needs a dry run and its confirmation first.")
        )
        return redirect("audit:projections")
    job = reprojection.start_job(kind, actor=Actor.of_user(request.user))
    return redirect("audit:projection-job", pk=job.pk)


@role_required(roles.ADMIN)
def projection_job_view(request: HttpRequest, pk: int) -> HttpResponse:
    job = get_object_or_404(ProjectionJob, pk=pk)
    context = {
        "job": job,
        "running": job.state in ("queued", "running"),
        "summary": _summary_rows(job.report) if job.kind == "audit" and job.report else [],
    }
    if getattr(request, "htmx", None) and request.htmx.target == "job-progress":
        return render(request, "audit/_job_progress.html", context)
    return render(request, "audit/projection_job.html", context)


@require_http_methods(["GET", "POST"])
@role_required(roles.ADMIN)
def reproject_one_view(request: HttpRequest, kind: str, pk: int) -> HttpResponse:
    """GET: the dry run for one object; POST: apply it (audited)."""
    mirrored = registry.get(kind)
    if mirrored is None:
        raise Http404
    obj = get_object_or_404(mirrored.model, pk=pk)
    if request.method == "POST":
        changed = reprojection.reproject_row(kind, obj.pk, actor=Actor.of_user(request.user))
        if changed:
            messages.success(
                request,
                gettext("Re-projected: %(fields)s updated and audited.")
                % {"fields": ", ".join(changed)},
            )
        else:
            messages.info(
                request, gettext("Nothing to change: the stored projection is already true.")
            )
        return redirect(safe_next(request, request.POST.get("next"), "audit:projections"))
    context = {
        "kind": kind,
        "obj": obj,
        "label": mirrored.object_id(obj),
        "changes": reprojection.diff(kind, obj),
        "expected": reprojection.expected_for(kind, obj),
        "next": safe_next(request, request.GET.get("next"), "audit:projections"),
    }
    return render(request, "audit/reproject_one.html", context)


@role_required(roles.ADMIN)
def reproject_lookup(request: HttpRequest, kind: str) -> HttpResponse:
    """From a report example (kind + id) to its re-projection page."""
    mirrored = registry.get(kind)
    if mirrored is None:
        raise Http404
    pk = selectors.object_pk(mirrored, request.GET.get("id", ""), request.GET.get("protocol", ""))
    if pk is None:
        raise Http404("No such object any more.")
    return redirect("audit:reproject-one", kind=kind, pk=pk)
