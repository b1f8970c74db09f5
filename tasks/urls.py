from django.urls import path

from beeos_console.cancels import views as cancel_views

from . import views

app_name = "tasks"
urlpatterns = [
    path("tasks/", views.TaskListView.as_view(), name="list"),
    path("tasks/<path:task_id>/cancel/", cancel_views.cancel_task_view, name="cancel"),
    path("tasks/<path:task_id>/", views.task_detail, name="detail"),
    path("messages/", views.MessageListView.as_view(), name="messages"),
]
