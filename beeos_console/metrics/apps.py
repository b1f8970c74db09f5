from django.apps import AppConfig


class MetricsConfig(AppConfig):
    name = "beeos_console.metrics"
    label = "console_metrics"
    verbose_name = "Prometheus metrics"

    def ready(self) -> None:
        # The receivers (cancel attempt counters, worker job counters) and the
        # built-in database gauges register themselves on import.
        from beeos_console.metrics import checks, database, receivers  # noqa: F401
