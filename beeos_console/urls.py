"""URL roots: every page, the REST API, the webhook receiver and the probes."""

from csp.decorators import csp_update
from django.contrib import admin
from django.contrib.auth.decorators import login_not_required, login_required
from django.urls import include, path
from django.views.i18n import set_language
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from beeos_console.accounts import views as account_views
from beeos_console.auditlog import views as auditlog_views
from beeos_console.auditlog.api import AuditEntryViewSet
from beeos_console.cancels import views as cancel_views
from beeos_console.core import views as core_views
from beeos_console.core.routers import IdRouter
from beeos_console.dashboard import views as dashboard_views
from beeos_console.ingest.views import IngestView
from beeos_console.metrics import views as metrics_views
from beeos_console.projection import views as projection_views
from beeos_console.savedviews import views as saved_views
from beeos_console.savedviews.api import SavedViewViewSet
from beeos_console.search import views as search_views
from beeos_console.upstream import views as webhook_views
from beeos_console.upstream.push_views import push_config_view
from beeos_console.upstream.webhooks import beeos_webhook
from operations.api.views import RuntimeOperationEventViewSet, RuntimeOperationViewSet
from tasks.api.views import MessageViewSet, TaskViewSet

# The audit log and the projection audit share the admin's "audit" section.
audit_patterns = (
    [
        path("log/", auditlog_views.AuditLogView.as_view(), name="log"),
        path("log/export.csv", auditlog_views.audit_log_csv, name="log-csv"),
        path("projections/", projection_views.projection_audit_view, name="projections"),
        path("projections/jobs/", projection_views.projection_job_start, name="projection-start"),
        path(
            "projections/jobs/<int:pk>/",
            projection_views.projection_job_view,
            name="projection-job",
        ),
        path(
            "projections/reproject/<str:kind>/<int:pk>/",
            projection_views.reproject_one_view,
            name="reproject-one",
        ),
        path(
            "projections/reproject/<str:kind>/",
            projection_views.reproject_lookup,
            name="reproject-lookup",
        ),
        path("lockouts/", account_views.lockouts_view, name="lockouts"),
        path("lockouts/<int:pk>/unlock/", account_views.unlock_view, name="unlock"),
    ],
    "audit",
)

bulk_patterns = (
    [
        path("", cancel_views.bulk_list_view, name="list"),
        path("<int:pk>/", cancel_views.bulk_detail_view, name="detail"),
        path("<str:kind>/cancel/", cancel_views.bulk_cancel_view, name="cancel"),
    ],
    "bulk",
)

saved_view_patterns = (
    [
        path("", saved_views.saved_views, name="list"),
        path("save/", saved_views.save_view, name="save"),
        path("<int:pk>/", saved_views.open_view, name="open"),
        path("<int:pk>/edit/", saved_views.edit_view, name="edit"),
        path("<int:pk>/delete/", saved_views.delete_view, name="delete"),
    ],
    "saved-views",
)

# The webhook inbox (admins): events kept with their errors, one click to the raw event.
webhook_patterns = (
    [
        path("", webhook_views.inbox_list_view, name="list"),
        path("<int:pk>/", webhook_views.inbox_event_view, name="detail"),
        path("<int:pk>/retry/", webhook_views.inbox_retry_view, name="retry"),
    ],
    "webhooks",
)

# Ids may hold "/" (sent as %2F): the router matches …/<id>/cancel before …/<id>/.
router = IdRouter()
# Both /cancel and /cancel/ (scripts rarely add the slash; a POST cannot follow a 301).
router.trailing_slash = "/?"
router.register("tasks", TaskViewSet, basename="task")
router.register("messages", MessageViewSet, basename="message")
router.register("operations", RuntimeOperationViewSet, basename="operation")
router.register("operation-events", RuntimeOperationEventViewSet, basename="operation-event")
router.register("audit-entries", AuditEntryViewSet, basename="audit-entry")
router.register("saved-views", SavedViewViewSet, basename="saved-view")

api_patterns = [
    path("v1/ingest/", IngestView.as_view(), name="api-ingest"),
    path("v1/webhooks/beeos/", beeos_webhook, name="api-webhook-beeos"),
    path("v1/search/", search_views.SearchApiView.as_view(), name="api-search"),
    path("v1/", include(router.urls)),
    # The schema needs a session or a token (SPECTACULAR_SETTINGS["SERVE_PERMISSIONS"]);
    # the docs page a login, and its script is a file (no inline script: CSP).
    path("schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path(
        "docs/",
        # Swagger UI sets inline styles: allowed on this page only (scripts stay 'self').
        csp_update({"style-src": ["'unsafe-inline'"]})(
            login_required(SpectacularSwaggerSplitView.as_view(url_name="api-schema"))
        ),
        name="api-docs",
    ),
]

urlpatterns = [
    path("", dashboard_views.dashboard, name="dashboard"),
    path("healthz", core_views.healthz, name="healthz"),
    path("readyz", core_views.readyz, name="readyz"),
    # Prometheus: a bearer token or the metrics bind, no login (beeos_console.metrics).
    path("metrics", metrics_views.metrics, name="metrics"),
    path("login/", account_views.LoginView.as_view(), name="login"),
    path("logout/", account_views.LogoutView.as_view(), name="logout"),
    # Single sign-on (OIDC): start and callback; 404 while it is not configured.
    path("oidc/", include("beeos_console.accounts.oidc_urls")),
    # Before admin/: the admin's password form is refused with CONSOLE_PASSWORD_LOGIN=0.
    path("admin/login/", account_views.admin_login),
    # The header's language switcher (POST, CSRF); the login page has it too.
    path("i18n/setlang/", login_not_required(set_language), name="set_language"),
    path("admin/", admin.site.urls),
    path("search/", search_views.search_page, name="search"),
    path("api/", include(api_patterns)),
    # Before tasks/<path:…>/: an A2A task's push-notification settings (read on demand).
    path("tasks/<path:task_id>/push-config/", push_config_view, name="task-push-config"),
    path("", include("tasks.urls")),
    path("", include("operations.urls")),
    path("", include("beeos_console.agents.urls")),
    path("audit/", include(audit_patterns)),
    path("bulk/", include(bulk_patterns)),
    path("views/", include(saved_view_patterns)),
    path("webhooks/", include(webhook_patterns)),
]
