from django.urls import path

from . import views

app_name = "agents"
urlpatterns = [
    path("agents/", views.AgentListView.as_view(), name="list"),
    # Outside agents/<id>/: no agent id can name these pages.
    path("scorecards/", views.ScorecardListView.as_view(), name="scorecards"),
    path("scorecards/run/", views.score_now_view, name="score-now"),
    path("agents/<path:agent_id>/card/refresh/", views.refresh_card_view, name="refresh-card"),
    path("agents/<path:agent_id>/", views.agent_detail, name="detail"),
]
