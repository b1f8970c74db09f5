from django.urls import path

from beeos_console.cancels import views as cancel_views

from . import views

app_name = "operations"
urlpatterns = [
    path("operations/", views.OperationListView.as_view(), name="list"),
    path(
        "operations/<path:operation_id>/cancel/",
        cancel_views.cancel_operation_view,
        name="cancel",
    ),
    path("operations/<path:operation_id>/", views.operation_detail, name="detail"),
]
