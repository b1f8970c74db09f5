"""Settings of the test identity provider (never the console's): everything it needs
comes from the environment ``serve`` sets."""

from __future__ import annotations

import json
import os
from pathlib import Path

HERE = Path(__file__).resolve().parent

SECRET_KEY = os.environ["IDP_SECRET_KEY"]
DEBUG = False
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
INSTALLED_APPS = [
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "oauth2_provider",
]
MIDDLEWARE = [
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
]
ROOT_URLCONF = "tests.oidc_provider.urls"
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [HERE / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
            ]
        },
    }
]
DATABASES = {"default": json.loads(os.environ["IDP_DATABASE"])}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
USE_TZ = True
LOGIN_URL = "/accounts/login/"
# The console may run on 127.0.0.1 too: cookies do not tell ports apart.
SESSION_COOKIE_NAME = "idp_sessionid"
CSRF_COOKIE_NAME = "idp_csrftoken"
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # test users only

OAUTH2_PROVIDER = {
    "OIDC_ENABLED": True,
    "OIDC_RSA_PRIVATE_KEY": os.environ["IDP_RSA_PRIVATE_KEY"],
    "OIDC_ISS_ENDPOINT": os.environ["IDP_ISSUER"],
    "PKCE_REQUIRED": True,
    "OAUTH2_VALIDATOR_CLASS": "tests.oidc_provider.validator.GroupsValidator",
    "OIDC_RP_INITIATED_LOGOUT_ENABLED": True,
    # An id_token_hint of the signed-in user ends the session without a question.
    "OIDC_RP_INITIATED_LOGOUT_ALWAYS_PROMPT": False,
    "SCOPES": {
        "openid": "OpenID Connect",
        "profile": "Your name and user name",
        "email": "Your email address",
    },
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"stderr": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["stderr"], "level": "WARNING"},
}
