"""The test identity provider's process: ``python -m tests.oidc_provider.serve``.

Reads IDP_DATABASE (JSON: a Django DATABASES entry, the database already created) and
IDP_CONTROL_TOKEN. Binds 127.0.0.1 on a free port, generates its RS256 key, migrates,
prints ``IDP READY http://127.0.0.1:<port>`` and serves (one thread per request)
until SIGTERM.
"""

from __future__ import annotations

import os
import secrets
import signal
import socketserver
import sys
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

import django
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from django.core.management import call_command
from django.core.wsgi import get_wsgi_application


class ThreadingWSGIServer(socketserver.ThreadingMixIn, WSGIServer):
    daemon_threads = True


class QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base's name
        pass


def private_key_pem() -> str:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()


def stop(signum: int, frame: Any) -> None:
    raise SystemExit(0)


def main() -> None:
    server = make_server(
        "127.0.0.1",
        0,
        lambda environ, start_response: [],
        server_class=ThreadingWSGIServer,
        handler_class=QuietHandler,
    )
    url = f"http://127.0.0.1:{server.server_port}"
    os.environ.update(
        DJANGO_SETTINGS_MODULE="tests.oidc_provider.settings",
        IDP_ISSUER=f"{url}/o",
        IDP_RSA_PRIVATE_KEY=private_key_pem(),
        IDP_SECRET_KEY=secrets.token_urlsafe(50),
    )
    django.setup()
    call_command("migrate", interactive=False, verbosity=0)
    server.set_app(get_wsgi_application())
    signal.signal(signal.SIGTERM, stop)
    print(f"IDP READY {url}", flush=True)
    try:
        server.serve_forever()
    finally:
        server.server_close()
        sys.stdout.flush()


if __name__ == "__main__":
    main()
