from django.urls import path

from . import views

app_name = "tasks"
urlpatterns = [
    path("tasks/", views.TaskListView.as_view(), name="list"),
    path("tasks/<path:task_id>/cancel/", views.cancel_task_view, name="cancel"),
    path("tasks/<path:task_id>/", views.task_detail, name="detail"),
    path("messages/", views.MessageListView.as_view(), name="messages"),
]
