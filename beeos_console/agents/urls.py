from django.urls import path

from . import views

app_name = "agents"
urlpatterns = [
    path("agents/", views.AgentListView.as_view(), name="list"),
    path("agents/<path:agent_id>/card/refresh/", views.refresh_card_view, name="refresh-card"),
    path("agents/<path:agent_id>/", views.agent_detail, name="detail"),
]
