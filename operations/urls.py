from django.urls import path

from beeos_console.core.exports import ListCsvExport

from . import views

app_name = "operations"
urlpatterns = [
    path("operations/", views.OperationListView.as_view(), name="list"),
    path(
        "operations/export.csv",
        ListCsvExport.as_view(list_view=views.OperationListView),
        name="export",
    ),
    path(
        "operations/<path:operation_id>/cancel/",
        views.cancel_operation_view,
        name="cancel",
    ),
    path("operations/<path:operation_id>/", views.operation_detail, name="detail"),
]
