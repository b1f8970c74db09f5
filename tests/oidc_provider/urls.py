from django.contrib.auth import views as auth_views
from django.urls import include, path

from tests.oidc_provider import control

urlpatterns = [
    path("o/", include("oauth2_provider.urls", namespace="oauth2_provider")),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("_test/users", control.users),
    path("_test/clients", control.clients),
    path("_test/sessions/<str:username>", control.sessions),
]
