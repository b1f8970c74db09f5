"""Benchmark settings: the console's settings, production-like, for the in-process test Client.

DEBUG is off (no SQL logging, cached templates) but nothing needs HTTPS, so the
test Client gets real pages instead of SSL redirects. The stock Django admin is
mounted beside the console by ``bench.urls``.
"""

from __future__ import annotations

import os
import warnings

os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/beeos_bench")
# The base settings read DEBUG at import time; the demo defaults (DEBUG on) keep
# them from demanding a SECRET_KEY. DEBUG is switched off just below.
os.environ.setdefault("DEBUG", "1")
# A 40-byte secret so the webhook receiver is enabled (bench/ingest.py signs with it).
os.environ.setdefault("BEEOS_WEBHOOK_SECRET", "whsec_bench_" + "b" * 40)

from beeos_console.settings import *  # noqa: E402, F403

DEBUG = False
ALLOWED_HOSTS = ["testserver", "127.0.0.1", "localhost"]
SECURE_SSL_REDIRECT = False
SESSION_COOKIE_SECURE = False
CSRF_COOKIE_SECURE = False
SECURE_HSTS_SECONDS = 0
# Fast hashing for the benchmark users (they log in with force_login anyway).
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
# Plain storage: no collectstatic / manifest needed for {% static %}.
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
ROOT_URLCONF = "bench.urls"
# whitenoise warns once that collectstatic has not run (as the test settings ignore it).
warnings.filterwarnings("ignore", "No directory at", UserWarning)
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    # Quiet: a 4xx logged per request would be timed too.
    "root": {"handlers": ["console"], "level": "ERROR"},
}
