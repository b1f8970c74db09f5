"""`manage.py create_api_token <user>`: issue an API token and print it once."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from beeos_console.core import tokens


class Command(BaseCommand):
    help = "Issue an API token for a user; the key is printed once and only its hash is kept."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("username")
        parser.add_argument(
            "--name", default="", help="What the token is for, e.g. 'nightly sync'."
        )
        parser.add_argument(
            "--days",
            type=int,
            default=None,
            help="Days until it expires (default CONSOLE_API_TOKEN_DAYS).",
        )

    def handle(
        self, *args: Any, username: str, name: str, days: int | None, **options: Any
    ) -> None:
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"No user named {username!r}.")
        if days is not None and days < 1:
            raise CommandError("--days must be at least 1.")
        token, key = tokens.issue(user, name, days=days)
        self.stderr.write(
            f"Token {token.prefix}… for {username}, expires "
            f"{token.expires_at.isoformat(timespec='seconds')}. "
            "Store it now: it is not shown again."
        )
        self.stdout.write(key)
