"""The console's URLs plus the STOCK Django admin, for comparison.

``stock-admin/``: a separate ``AdminSite`` with plain ``ModelAdmin`` classes —
``list_filter = ("status",)``, default paginator, default
``show_full_result_count`` — i.e. what a stock admin does on these tables.
``stock-admin2/``: the same for tasks with two list filters (status, protocol).
"""

from __future__ import annotations

from django.contrib import admin
from django.urls import path

from beeos_console.urls import urlpatterns as console_urlpatterns
from operations.models import RuntimeOperation
from tasks.models import Message, Task


class StockAdminSite(admin.AdminSite):
    site_header = "Stock Django admin (benchmark)"


class StatusFilterAdmin(admin.ModelAdmin):
    list_filter = ("status",)


class TwoFilterAdmin(admin.ModelAdmin):
    list_filter = ("status", "protocol")


stock_admin = StockAdminSite(name="stockadmin")
stock_admin.register(Task, StatusFilterAdmin)
stock_admin.register(Message, StatusFilterAdmin)
stock_admin.register(RuntimeOperation, StatusFilterAdmin)

stock_admin2 = StockAdminSite(name="stockadmin2")
stock_admin2.register(Task, TwoFilterAdmin)

urlpatterns = [
    path("stock-admin/", stock_admin.urls),
    path("stock-admin2/", stock_admin2.urls),
    *console_urlpatterns,
]
