from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from . import audit_views, cancel_views, views

audit_patterns = (
    [
        path("log/", audit_views.AuditLogView.as_view(), name="log"),
        path("log/export.csv", audit_views.audit_log_csv, name="log-csv"),
        path("projections/", audit_views.projection_audit_view, name="projections"),
        path("projections/jobs/", audit_views.projection_job_start, name="projection-start"),
        path("projections/jobs/<int:pk>/", audit_views.projection_job_view, name="projection-job"),
        path(
            "projections/reproject/<str:kind>/<int:pk>/",
            audit_views.reproject_one_view,
            name="reproject-one",
        ),
        path(
            "projections/reproject/<str:kind>/",
            audit_views.reproject_lookup,
            name="reproject-lookup",
        ),
    ],
    "audit",
)

bulk_patterns = (
    [
        path("<int:pk>/", cancel_views.bulk_detail_view, name="detail"),
        path("<str:kind>/cancel/", cancel_views.bulk_cancel_view, name="cancel"),
    ],
    "bulk",
)

urlpatterns = [
    path("", views.dashboard, name="dashboard"),
    path("healthz", views.healthz, name="healthz"),
    path("readyz", views.readyz, name="readyz"),
    path(
        "login/",
        auth_views.LoginView.as_view(template_name="registration/login.html"),
        name="login",
    ),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
    path("api/", include("beeos_console.api_urls")),
    path("", include("tasks.urls")),
    path("", include("operations.urls")),
    path("audit/", include(audit_patterns)),
    path("bulk/", include(bulk_patterns)),
]
