from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from . import audit_views, cancel_views, views

audit_patterns = (
    [path("log/", audit_views.AuditLogView.as_view(), name="log")],
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
