"""The suite's settings: the project's own (``beeos_console.settings``), and two changes
that only make it faster.

Processes the tests start (``manage.py``, gunicorn, ``make serve``) run the project's
settings as deployed: DJANGO_SETTINGS_MODULE is set back for them below. pytest finds
this module through ``--ds`` (pyproject.toml), which outranks that variable.
"""

import os

from beeos_console.settings import *  # noqa: F403
from beeos_console.settings import DATABASES

# Django's PostgreSQL backend, truncating only the tables that hold rows (tests/postgres).
DATABASES["default"]["ENGINE"] = "tests.postgres"
# The suite creates many users; none needs a slow hash.
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

os.environ["DJANGO_SETTINGS_MODULE"] = "beeos_console.settings"
