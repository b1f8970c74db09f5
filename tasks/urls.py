from django.urls import path

from beeos_console.core.exports import ListCsvExport

from . import views

app_name = "tasks"
urlpatterns = [
    path("tasks/", views.TaskListView.as_view(), name="list"),
    path("tasks/export.csv", ListCsvExport.as_view(list_view=views.TaskListView), name="export"),
    path("tasks/<path:task_id>/cancel/", views.cancel_task_view, name="cancel"),
    path("tasks/<path:task_id>/", views.task_detail, name="detail"),
    path("messages/", views.MessageListView.as_view(), name="messages"),
    path(
        "messages/export.csv",
        ListCsvExport.as_view(list_view=views.MessageListView),
        name="messages-export",
    ),
]
