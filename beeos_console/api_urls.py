"""`/api/v1/`: read API, ingest, webhooks; `/api/schema/` and `/api/docs/`."""

from __future__ import annotations

from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView
from rest_framework import routers, viewsets

from operations.api import RuntimeOperationEventViewSet, RuntimeOperationViewSet
from tasks.api import MessageViewSet, TaskViewSet
from tasks.webhooks import beeos_webhook

from .api import IsAdmin, KeysetPagination
from .audit_filters import AuditEntryFilterSet
from .ingest import IngestView
from .models import AuditEntry
from .serializers import AuditEntrySerializer


class AuditEntryViewSet(viewsets.ReadOnlyModelViewSet):
    """The audit log (admin role). Entries are immutable: no write methods exist."""

    permission_classes = [IsAdmin]
    filterset_class = AuditEntryFilterSet
    pagination_class = KeysetPagination
    serializer_class = AuditEntrySerializer
    queryset = AuditEntry.objects.all()
    sort_fields = {"at": "at"}
    default_sort = "at"


router = routers.DefaultRouter()
# Both /cancel and /cancel/ (scripts rarely add the slash; a POST cannot follow a 301).
router.trailing_slash = "/?"
router.register("tasks", TaskViewSet, basename="task")
router.register("messages", MessageViewSet, basename="message")
router.register("operations", RuntimeOperationViewSet, basename="operation")
router.register("operation-events", RuntimeOperationEventViewSet, basename="operation-event")
router.register("audit-entries", AuditEntryViewSet, basename="audit-entry")

urlpatterns = [
    path("v1/ingest/", IngestView.as_view(), name="api-ingest"),
    path("v1/webhooks/beeos/", beeos_webhook, name="api-webhook-beeos"),
    path("v1/", include(router.urls)),
    path("schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("docs/", SpectacularSwaggerView.as_view(url_name="api-schema"), name="api-docs"),
]
