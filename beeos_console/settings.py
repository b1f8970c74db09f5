"""Settings for the BeeOS Operator Console, all from the environment.

Defaults are for the zero-setup demo only (the embedded PostgreSQL under
var/pg, DEBUG on). Production: DEBUG=0, a real SECRET_KEY, ALLOWED_HOSTS,
DATABASE_URL to PostgreSQL; `manage.py check --deploy` is then clean.
"""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured
from django.utils.dateparse import parse_duration

from beeos_console.core import embedded_postgres

BASE_DIR = Path(__file__).resolve().parent.parent


def env_bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def env_int(name: str, default: int) -> int:
    value = os.environ.get(name, "").strip()
    if not value:
        return default
    try:
        return int(value)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name} must be a whole number, not {value!r}.") from exc


_DURATION_UNITS = {"s": 1, "m": 60, "h": 3600}


def env_duration(name: str, default: timedelta) -> timedelta:
    """Seconds (``300``, ``300s``), minutes or hours (``5m``, ``1h``) or a duration
    Django parses (``00:05:00``, ISO 8601 ``PT5M``); never negative."""
    value = os.environ.get(name, "").strip()
    if not value:
        return default
    parsed: timedelta | None
    if value[-1:].lower() in _DURATION_UNITS and value[:-1].strip().isdigit():
        parsed = timedelta(seconds=int(value[:-1]) * _DURATION_UNITS[value[-1].lower()])
    else:
        parsed = parse_duration(value)
    if parsed is None or parsed < timedelta(0):
        raise ImproperlyConfigured(
            f"{name} must be seconds (300), minutes (5m), hours (1h) or a duration "
            f"(00:05:00, PT5M), not {value!r}."
        )
    return parsed


def env_list(name: str, default: str = "") -> list[str]:
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]


DEBUG = env_bool("DEBUG", True)

_DEMO_SECRET = "demo-only-insecure-key-set-SECRET_KEY-in-production"
SECRET_KEY = os.environ.get("SECRET_KEY", "")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured("SECRET_KEY must be set when DEBUG is off.")
    SECRET_KEY = _DEMO_SECRET

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", "127.0.0.1,localhost,[::1]" if DEBUG else "")
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "django.contrib.postgres",
    "rest_framework",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_tasks",
    "django_tasks_db",
    "django_htmx",
    "csp",
    # Before the console's packages: its login-failed receiver runs after axes's, so
    # it sees whether this failure locked the client out.
    "axes",
    # The console's own packages (DESIGN.md, "Layout"); their tables share the
    # app label "console" (beeos_console.core owns the migrations).
    "beeos_console.core.apps.ConsoleConfig",
    "beeos_console.auditlog.apps.AuditlogConfig",
    "beeos_console.mirror.apps.MirrorConfig",
    "beeos_console.savedviews.apps.SavedViewsConfig",
    "beeos_console.cancels.apps.CancelsConfig",
    "beeos_console.upstream.apps.UpstreamConfig",
    "beeos_console.projection.apps.ProjectionConfig",
    "beeos_console.demo.apps.DemoConfig",
    "beeos_console.accounts.apps.AccountsConfig",
    "tasks",
    "operations",
]

MIDDLEWARE = [
    # First: errors under /api/ are JSON, even those Django answers before a view.
    "beeos_console.core.middleware.ApiErrorsMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "csp.middleware.CSPMiddleware",
    "beeos_console.core.middleware.SecurityHeadersMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # NUL in a path, query or form value: 400 before any view looks anything up.
    "beeos_console.core.middleware.NulParametersMiddleware",
    "beeos_console.core.middleware.IdleSessionMiddleware",
    "django.contrib.auth.middleware.LoginRequiredMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    # Last, as django-axes asks: turns a locked-out login into the lockout page.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "beeos_console.urls"
WSGI_APPLICATION = "beeos_console.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "beeos_console.cancels.context_processors.console",
            ],
        },
    },
]

# PostgreSQL everywhere (DESIGN.md). Without DATABASE_URL: the embedded server
# under var/pg that `make run` and `make test` start (nothing is started here).
_DATABASE_URL = os.environ.get("DATABASE_URL", "")
if not _DATABASE_URL and not DEBUG:
    raise ImproperlyConfigured("DATABASE_URL must be set when DEBUG is off.")
DATABASES = {
    "default": dj_database_url.parse(
        _DATABASE_URL or embedded_postgres.database_url(),
        conn_max_age=int(os.environ.get("DB_CONN_MAX_AGE", "60")),
        conn_health_checks=True,
    )
}
# Bounded waits: a database that does not answer fails a request instead of hanging
# it. connect_timeout (seconds) bounds connecting; statement_timeout (server side)
# bounds every statement; 0 turns either off. Added to whatever DATABASE_URL sets.
DATABASE_CONNECT_TIMEOUT = env_int("DATABASE_CONNECT_TIMEOUT", 5)
DATABASE_STATEMENT_TIMEOUT = env_int("DATABASE_STATEMENT_TIMEOUT", 30)
_db_options = DATABASES["default"].setdefault("OPTIONS", {})
if DATABASE_CONNECT_TIMEOUT > 0:
    _db_options.setdefault("connect_timeout", DATABASE_CONNECT_TIMEOUT)
if DATABASE_STATEMENT_TIMEOUT > 0:
    _db_options["options"] = " ".join(
        part
        for part in (
            _db_options.get("options", ""),
            f"-c statement_timeout={DATABASE_STATEMENT_TIMEOUT * 1000}",
        )
        if part
    )
if DATABASES["default"]["ENGINE"] not in {
    "django.db.backends.postgresql",
    "django.contrib.gis.db.backends.postgis",
}:
    raise ImproperlyConfigured("DATABASE_URL must point to PostgreSQL (postgres://...).")
# Migrations may run as another (owner) role: the app's own role cannot alter the
# schema or rewrite the audit log (`manage.py grant_app_role`).
DATABASE_MIGRATE_URL = os.environ.get("DATABASE_MIGRATE_URL", "")
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
AUTHENTICATION_BACKENDS = [
    # First: refuses a locked-out username+IP before any password is checked.
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "dashboard"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = BASE_DIR / "var" / "staticfiles"
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"
        if DEBUG
        else "whitenoise.storage.CompressedManifestStaticFilesStorage"
    },
}

# --- Logins, sessions, API tokens -----------------------------------------
# django-axes locks a username+IP out after this many failed logins, for this long
# (the console's own page, HTTP 429); admins unlock at /audit/lockouts/.
CONSOLE_LOGIN_FAILURE_LIMIT = env_int("CONSOLE_LOGIN_FAILURE_LIMIT", 5)
CONSOLE_LOGIN_COOLOFF_MINUTES = env_int("CONSOLE_LOGIN_COOLOFF_MINUTES", 15)
AXES_FAILURE_LIMIT = CONSOLE_LOGIN_FAILURE_LIMIT
AXES_COOLOFF_TIME = timedelta(minutes=CONSOLE_LOGIN_COOLOFF_MINUTES)
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_LOCKOUT_CALLABLE = "beeos_console.accounts.views.locked_out"  # our page, HTTP 429
AXES_HTTP_RESPONSE_CODE = 429
AXES_RESET_ON_SUCCESS = True
# A try while locked out neither counts nor restarts the cool-off (it is still audited).
AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT = False
AXES_VERBOSE = False
# Successful logins are in the console's audit log; no second log in axes's tables.
AXES_DISABLE_ACCESS_LOG = True

# A session ends after this many idle minutes. Its expiry moves forward at most once
# a minute (IdleSessionMiddleware), not with a session write on every request.
CONSOLE_SESSION_IDLE_MINUTES = env_int("CONSOLE_SESSION_IDLE_MINUTES", 30)
SESSION_COOKIE_AGE = CONSOLE_SESSION_IDLE_MINUTES * 60
SESSION_SAVE_EVERY_REQUEST = False

# An API token expires this many days after it is issued.
CONSOLE_API_TOKEN_DAYS = env_int("CONSOLE_API_TOKEN_DAYS", 90)

# --- Security: on by default whenever DEBUG is off -------------------------
SESSION_COOKIE_HTTPONLY = True
CSRF_COOKIE_HTTPONLY = False  # htmx reads the token from the page, not the cookie
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
if not DEBUG:
    SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", True)
    CSRF_COOKIE_SECURE = env_bool("CSRF_COOKIE_SECURE", True)
    SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", True)
    SECURE_HSTS_SECONDS = int(os.environ.get("SECURE_HSTS_SECONDS", str(60 * 60 * 24 * 365)))
    SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", True)
    SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", True)
    SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^readyz$"]
# Content-Security-Policy (django-csp): scripts from our own origin only, so no
# inline <script> or on...= handler works; styles, images, fonts, XHR likewise.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'"],
        "img-src": ["'self'", "data:"],
        "font-src": ["'self'"],
        "connect-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'self'"],
        "form-action": ["'self'"],
        "frame-ancestors": ["'none'"],
    },
}
# No powerful browser feature is used by any page (core.middleware).
PERMISSIONS_POLICY = (
    "accelerometer=(), camera=(), geolocation=(), gyroscope=(), magnetometer=(), "
    "microphone=(), payment=(), usb=()"
)
if env_bool("USE_X_FORWARDED_PROTO", False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "beeos_console.core.tokens.ApiTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": [
        "rest_framework.permissions.IsAuthenticated",
        "beeos_console.core.api.IsSupport",
    ],
    # JSON bodies through core.jsonbody: bounded size and nesting, a 4xx for any bad body.
    "DEFAULT_PARSER_CLASSES": [
        "beeos_console.core.api.JSONBodyParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    # The FilterSets, plus ``?view=<id>``: a saved view's filters (beeos_console.savedviews).
    "DEFAULT_FILTER_BACKENDS": ["beeos_console.savedviews.filters.SavedViewFilterBackend"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_RENDERER_CLASSES": [
        "rest_framework.renderers.JSONRenderer",
        "rest_framework.renderers.BrowsableAPIRenderer",
    ],
    "UNAUTHENTICATED_USER": "django.contrib.auth.models.AnonymousUser",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "BeeOS Operator Console API",
    "DESCRIPTION": (
        "Read the mirrored BeeOS tasks, messages and runtime operations (raw values and the "
        "product projection side by side), push snapshots through the ingest API, and act "
        "on work. Authenticate with a session or `Authorization: Bearer <token>`."
    ),
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    # Not public: a session or an API token (the docs page needs a login too).
    "SERVE_PERMISSIONS": ["rest_framework.permissions.IsAuthenticated"],
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
}
# Background work (bulk cancels) runs on django-tasks with its database
# backend: `manage.py db_worker` on any number of machines.
TASKS = {
    "default": {
        "BACKEND": "django_tasks_db.DatabaseBackend",
        "QUEUES": ["default"],
    }
}

INGEST_MAX_RECORDS = 1000
INGEST_MAX_BYTES = int(os.environ.get("INGEST_MAX_BYTES", str(8 * 1024 * 1024)))

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
}

# --- BeeOS upstream ------------------------------------------------------
# Without BEEOS_API_URL the console runs on the local gateway (demo): cancels
# are applied to the mirror only, and the UI says so.
BEEOS_API_URL = os.environ.get("BEEOS_API_URL", "")
# Where cancels go, named here so the cancel engine never imports the upstream
# package: BeeOS's gateway when BEEOS_API_URL is set, else the local (demo) one.
CONSOLE_UPSTREAM_GATEWAY = "beeos_console.upstream.gateway.BeeOSGateway"
CONSOLE_LOCAL_GATEWAY = "beeos_console.cancels.gateways.LocalGateway"
BEEOS_API_KEY = os.environ.get("BEEOS_API_KEY", "")
BEEOS_CLOUD_URL = os.environ.get("BEEOS_CLOUD_URL", "")
BEEOS_CLOUD_API_KEY = os.environ.get("BEEOS_CLOUD_API_KEY", "")
BEEOS_WEBHOOK_SECRET = os.environ.get("BEEOS_WEBHOOK_SECRET", "")
BEEOS_INSTANCES = env_list("BEEOS_INSTANCES")

# Upstream clocks may run this far ahead: a snapshot stamped later than now + this is
# stored (with a producer note) but its stamp orders as now + this (mirror.edge.is_older).
CONSOLE_MAX_CLOCK_SKEW = env_duration("CONSOLE_MAX_CLOCK_SKEW", timedelta(minutes=5))

# A list's CSV export stops after this many rows and says so in its last line.
CONSOLE_EXPORT_MAX_ROWS = env_int("CONSOLE_EXPORT_MAX_ROWS", 100_000)

# Work that is not terminal after this many minutes counts as "stuck".
CONSOLE_STUCK_AFTER_MINUTES = int(os.environ.get("CONSOLE_STUCK_AFTER_MINUTES", "60"))
