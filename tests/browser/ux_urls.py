"""The console's URLs plus one that fails: the browser tests' look at the 500 page."""

from django.urls import path

from beeos_console.urls import urlpatterns as console_urlpatterns


def fail(request):
    raise RuntimeError("a deliberate failure: the accessibility tests' 500 page")


urlpatterns = [path("__ux__/fail/", fail), *console_urlpatterns]
