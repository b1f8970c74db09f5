"""Benchmark kit (not tests): load millions of rows, time the console against the stock admin.

See ``bench/README.md``. Every script runs with ``DJANGO_SETTINGS_MODULE=bench.settings``
against its own PostgreSQL database (``DATABASE_URL``), never the test databases.
"""
