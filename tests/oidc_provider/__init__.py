"""A real OpenID Connect provider for the single sign-on tests: a small Django project
with django-oauth-toolkit (OIDC on, RS256 key generated at start, PKCE required, RP-
initiated logout), run as its own process on 127.0.0.1 with its own PostgreSQL
database. ``harness.running_provider`` starts it; ``serve`` is the process."""
