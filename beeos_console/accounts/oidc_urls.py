"""Single sign-on URLs, under ``oidc/``. The names are mozilla-django-oidc's (it
reverses the callback's to build the ``redirect_uri``)."""

from django.urls import path

from beeos_console.accounts.oidc_views import SSOCallbackView, SSOStartView

urlpatterns = [
    path("authenticate/", SSOStartView.as_view(), name="oidc_authentication_init"),
    path("callback/", SSOCallbackView.as_view(), name="oidc_authentication_callback"),
]
