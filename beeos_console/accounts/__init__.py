"""Logins: the login and logout pages, login throttling (django-axes) and its audit
trail, and the admins' lockout page."""
