"""The WSGI entry point (gunicorn, ``runserver``): Django's application, with the
webhook receiver answered in front of it (``beeos_console.webhook_wsgi``)."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "beeos_console.settings")
django_application = get_wsgi_application()

# Imported once Django is set up (get_wsgi_application): the receiver's view needs models.
from beeos_console.webhook_wsgi import WebhookFastPath  # noqa: E402

application = WebhookFastPath(django_application)
