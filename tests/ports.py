"""A free TCP port on the loopback, for the servers the tests start (gunicorn, ``make serve``)."""

from __future__ import annotations

import socket


def free_port() -> int:
    """A port nothing listens on now; the caller's server binds it next (a port another
    process takes in between makes that server fail to start, loudly)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]
