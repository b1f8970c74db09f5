from django.urls import path

from . import views

app_name = "operations"
urlpatterns = [
    path("operations/", views.OperationListView.as_view(), name="list"),
    path(
        "operations/<path:operation_id>/cancel/",
        views.cancel_operation_view,
        name="cancel",
    ),
    path("operations/<path:operation_id>/", views.operation_detail, name="detail"),
]
