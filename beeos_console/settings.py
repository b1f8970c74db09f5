"""Settings for the BeeOS Operator Console, all from the environment.

Defaults are for the zero-setup demo only (the embedded PostgreSQL under
var/pg, DEBUG on). Production: DEBUG=0, a real SECRET_KEY, ALLOWED_HOSTS,
DATABASE_URL to PostgreSQL; `manage.py check --deploy` is then clean.
"""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path
from urllib.parse import urlsplit

import dj_database_url
from django.core.exceptions import ImproperlyConfigured
from django.utils.dateparse import parse_duration
from whitenoise.compress import Compressor

from beeos_console.core import embedded_postgres, requestlog, roles

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
if not ALLOWED_HOSTS and not DEBUG:
    raise ImproperlyConfigured("ALLOWED_HOSTS must be set when DEBUG is off.")
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
    "beeos_console.agents.apps.AgentsConfig",
    "beeos_console.accounts.apps.AccountsConfig",
    "beeos_console.retention.apps.RetentionConfig",
    "beeos_console.metrics.apps.MetricsConfig",
    "tasks",
    "operations",
]

MIDDLEWARE = [
    # Outermost: the request id and one log line per request, whatever answered it.
    "beeos_console.core.requestlog.RequestLogMiddleware",
    # Request latency by view for /metrics (and the ingest / webhook results answered).
    "beeos_console.metrics.middleware.RequestMetricsMiddleware",
    # Next: errors under /api/ are JSON, even those Django answers before a view.
    "beeos_console.core.middleware.ApiErrorsMiddleware",
    "django.middleware.security.SecurityMiddleware",
    # Up to here: what the webhook receiver's POSTs go through as well; the WSGI entry
    # point answers them before Django's handler (beeos_console.webhook_wsgi).
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "csp.middleware.CSPMiddleware",
    "beeos_console.core.middleware.SecurityHeadersMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    # After sessions, before CommonMiddleware (Django's order): cookie, then Accept-Language.
    "django.middleware.locale.LocaleMiddleware",
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
    # Django's ModelBackend, reading the user's roles in the query that loads it.
    "beeos_console.accounts.backends.ConsoleModelBackend",
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "dashboard"
LOGOUT_REDIRECT_URL = "login"

# English and Simplified Chinese. The language follows the browser (Accept-Language)
# until the header switcher sets Django's language cookie; times stay in UTC, marked so.
LANGUAGE_CODE = "en"
LANGUAGES = [("en", "English"), ("zh-hans", "简体中文")]
LOCALE_PATHS = [BASE_DIR / "beeos_console" / "locale"]
LANGUAGE_COOKIE_AGE = 60 * 60 * 24 * 365  # remembered for a year, not just the session
LANGUAGE_COOKIE_HTTPONLY = True
LANGUAGE_COOKIE_SAMESITE = "Lax"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = Path(os.environ.get("STATIC_ROOT", "") or BASE_DIR / "var" / "staticfiles")
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"
        if DEBUG
        else "whitenoise.storage.CompressedManifestStaticFilesStorage"
    },
}
# Source maps (14 of the 27 MB collected, most of them the API docs' bundles) are read by
# browser devtools only: not gzipped, which halves collectstatic at every `make serve`.
WHITENOISE_SKIP_COMPRESS_EXTENSIONS = [*Compressor.SKIP_COMPRESS_EXTENSIONS, "map"]

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
# Django's database sessions, read with a written-out SELECT (core.sessions).
SESSION_ENGINE = "beeos_console.core.sessions"

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
    LANGUAGE_COOKIE_SECURE = SESSION_COOKIE_SECURE
    SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", True)
    SECURE_HSTS_SECONDS = int(os.environ.get("SECURE_HSTS_SECONDS", str(60 * 60 * 24 * 365)))
    SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", True)
    SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", True)
    SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^readyz$", r"^metrics$"]
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

# --- Single sign-on (OpenID Connect) ----------------------------------------
# mozilla-django-oidc, authorization code flow with PKCE (beeos_console.accounts.oidc;
# README "Deploying"). On when OIDC_RP_CLIENT_ID is set. Endpoints are discovered from
# OIDC_OP_ISSUER unless given one by one. A user is the OIDC_USERNAME_CLAIM value (the
# provider's stable `sub` by default, never the email); roles come from the
# OIDC_ROLES_CLAIM values through OIDC_ROLE_MAP ("idp-group=role,..."), re-synced at
# every login. CONSOLE_PASSWORD_LOGIN=0 leaves single sign-on as the only way in.
OIDC_RP_CLIENT_ID = os.environ.get("OIDC_RP_CLIENT_ID", "")
OIDC_RP_CLIENT_SECRET = os.environ.get("OIDC_RP_CLIENT_SECRET", "")
OIDC_OP_ISSUER = os.environ.get("OIDC_OP_ISSUER", "")
OIDC_OP_AUTHORIZATION_ENDPOINT = os.environ.get("OIDC_OP_AUTHORIZATION_ENDPOINT", "")
OIDC_OP_TOKEN_ENDPOINT = os.environ.get("OIDC_OP_TOKEN_ENDPOINT", "")
OIDC_OP_USER_ENDPOINT = os.environ.get("OIDC_OP_USER_ENDPOINT", "")
OIDC_OP_JWKS_ENDPOINT = os.environ.get("OIDC_OP_JWKS_ENDPOINT", "")
OIDC_OP_LOGOUT_ENDPOINT = os.environ.get("OIDC_OP_LOGOUT_ENDPOINT", "")
OIDC_RP_SIGN_ALGO = os.environ.get("OIDC_RP_SIGN_ALGO", "RS256")
OIDC_RP_SCOPES = os.environ.get("OIDC_RP_SCOPES", "openid email profile")
OIDC_PROVIDER_NAME = os.environ.get("OIDC_PROVIDER_NAME", "")  # "Sign in with <name>"
OIDC_USERNAME_CLAIM = os.environ.get("OIDC_USERNAME_CLAIM", "sub")
OIDC_ROLES_CLAIM = os.environ.get("OIDC_ROLES_CLAIM", "groups")
OIDC_ROLE_MAP: dict[str, str] = {}
for _pair in env_list("OIDC_ROLE_MAP"):
    _value, _, _role = (part.strip() for part in _pair.rpartition("="))
    if not _value or _role not in (roles.SUPPORT, roles.OPERATOR, roles.ADMIN):
        raise ImproperlyConfigured(
            f"OIDC_ROLE_MAP: {_pair!r} is not 'claim-value=role' with role support, "
            "operator or admin."
        )
    OIDC_ROLE_MAP[_value] = _role
OIDC_TIMEOUT = env_int("OIDC_TIMEOUT", 10)  # seconds, each call to the provider
OIDC_USE_PKCE = True
OIDC_PKCE_CODE_CHALLENGE_METHOD = "S256"
OIDC_USE_NONCE = True
OIDC_STORE_ID_TOKEN = True  # the id_token_hint of RP-initiated logout
CONSOLE_PASSWORD_LOGIN = env_bool("CONSOLE_PASSWORD_LOGIN", True)
if OIDC_RP_CLIENT_ID:
    if not OIDC_RP_CLIENT_SECRET:
        raise ImproperlyConfigured("OIDC_RP_CLIENT_SECRET must be set with OIDC_RP_CLIENT_ID.")
    if not OIDC_OP_ISSUER and not (
        OIDC_OP_AUTHORIZATION_ENDPOINT and OIDC_OP_TOKEN_ENDPOINT and OIDC_OP_JWKS_ENDPOINT
    ):
        raise ImproperlyConfigured(
            "Single sign-on needs OIDC_OP_ISSUER, or OIDC_OP_AUTHORIZATION_ENDPOINT, "
            "OIDC_OP_TOKEN_ENDPOINT and OIDC_OP_JWKS_ENDPOINT."
        )
    AUTHENTICATION_BACKENDS.append("beeos_console.accounts.oidc.ConsoleOIDCBackend")
    # Logging out answers the form with a redirect to the provider (RP-initiated
    # logout), and browsers hold that redirect to form-action.
    _logout_at = urlsplit(OIDC_OP_LOGOUT_ENDPOINT or OIDC_OP_ISSUER)
    if _logout_at.scheme and _logout_at.netloc:
        CONTENT_SECURITY_POLICY["DIRECTIVES"]["form-action"].append(
            f"{_logout_at.scheme}://{_logout_at.netloc}"
        )
if not CONSOLE_PASSWORD_LOGIN:
    if not OIDC_RP_CLIENT_ID:
        raise ImproperlyConfigured(
            "CONSOLE_PASSWORD_LOGIN=0 needs single sign-on (OIDC_RP_CLIENT_ID): "
            "nobody could log in."
        )
    AUTHENTICATION_BACKENDS[
        AUTHENTICATION_BACKENDS.index("beeos_console.accounts.backends.ConsoleModelBackend")
    ] = "beeos_console.accounts.backends.PasswordLoginOffBackend"

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

# One JSON object per line (beeos_console.core.requestlog), or plain text for `make run`.
LOG_FORMAT = os.environ.get("LOG_FORMAT", "") or ("text" if DEBUG else "json")
if LOG_FORMAT not in {"json", "text"}:
    raise ImproperlyConfigured(f"LOG_FORMAT must be json or text, not {LOG_FORMAT!r}.")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {LOG_FORMAT: requestlog.formatter_config(LOG_FORMAT)},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": LOG_FORMAT}},
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
# Agents whose A2A tasks (sent and received) `sync_beeos` lists through beeos-cloud-sdk.
BEEOS_A2A_AGENTS = env_list("BEEOS_A2A_AGENTS")
# History messages asked for per A2A task read (the Cloud's default is 50, its maximum 200).
BEEOS_A2A_HISTORY_LENGTH = env_int("BEEOS_A2A_HISTORY_LENGTH", 200)
# Callables `sync_beeos` calls after each pass, named here so the upstream package never
# imports the features it schedules (each takes no argument, returns a line or None).
BEEOS_SYNC_AFTER_PASS = [
    "beeos_console.agents.tasks.schedule_card_reads",
    "beeos_console.agents.tasks.schedule_scoring",
]
# The sync has the worker re-read an agent card once its last read is older than this
# many seconds (configured A2A agents and every card read before); 0 = never.
AGENT_CARD_REFRESH_SECONDS = env_int("AGENT_CARD_REFRESH_SECONDS", 3600)
if AGENT_CARD_REFRESH_SECONDS < 0:
    raise ImproperlyConfigured("AGENT_CARD_REFRESH_SECONDS must be 0 (never) or more.")
# After a sync pass, the worker scores the agents' conformance again once the newest
# scorecards are older than this many seconds; 0 = on demand only (or manage.py score_agents).
AGENT_SCORECARD_EVERY_SECONDS = env_int("AGENT_SCORECARD_EVERY_SECONDS", 900)
if AGENT_SCORECARD_EVERY_SECONDS < 0:
    raise ImproperlyConfigured("AGENT_SCORECARD_EVERY_SECONDS must be 0 (never) or more.")
# Open tasks, and open operations per instance, each sync pass re-reads as a safety net for
# a lost webhook (webhooks guide: "poll periodically"); 0 = none.
BEEOS_SYNC_SWEEP = env_int("BEEOS_SYNC_SWEEP", 20)
# Webhooks are stored on receipt and applied in batches (beeos_console.upstream.inbox):
# by a db_worker job the receiver keeps waiting (at most one, checked at most every
# WEBHOOK_NUDGE_SECONDS per process; 0 = never: run `manage.py apply_webhooks --loop`).
WEBHOOK_NUDGE_SECONDS = float(os.environ.get("WEBHOOK_NUDGE_SECONDS", "1"))
# The job polls an empty inbox this long before it ends (> the nudge interval).
WEBHOOK_APPLY_LINGER_SECONDS = float(os.environ.get("WEBHOOK_APPLY_LINGER_SECONDS", "3"))
WEBHOOK_APPLY_BATCH = env_int("WEBHOOK_APPLY_BATCH", 1000)
# A job ends after this long even under a steady stream (a single worker's other jobs).
WEBHOOK_APPLY_JOB_SECONDS = float(os.environ.get("WEBHOOK_APPLY_JOB_SECONDS", "30"))

# Upstream clocks may run this far ahead: a snapshot stamped later than now + this is
# stored (with a producer note) but its stamp orders as now + this (mirror.edge.is_older).
CONSOLE_MAX_CLOCK_SKEW = env_duration("CONSOLE_MAX_CLOCK_SKEW", timedelta(minutes=5))

# A list's CSV export stops after this many rows and says so in its last line.
CONSOLE_EXPORT_MAX_ROWS = env_int("CONSOLE_EXPORT_MAX_ROWS", 100_000)

# Work that is not terminal after this many minutes counts as "stuck".
CONSOLE_STUCK_AFTER_MINUTES = int(os.environ.get("CONSOLE_STUCK_AFTER_MINUTES", "60"))

# --- Prometheus metrics: GET /metrics (beeos_console.metrics; README "Deploying") ---
# Prometheus sends "Authorization: Bearer <METRICS_TOKEN>" (32 characters at least).
# Without a token /metrics is a 404, except for requests arriving on METRICS_BIND: a
# separate TCP "host:port" gunicorn also listens on (gunicorn_conf.py), reachable by
# Prometheus only. Several processes (gunicorn workers, the db_worker): set
# PROMETHEUS_MULTIPROC_DIR to an empty folder they share (read by prometheus_client).
METRICS_TOKEN = os.environ.get("METRICS_TOKEN", "")
METRICS_BIND = os.environ.get("METRICS_BIND", "")
# Open, stuck and queued work is counted up to this many rows (bounded scrapes).
METRICS_COUNT_CAP = env_int("METRICS_COUNT_CAP", 10_000)
