from django.apps import AppConfig


class MemoryPlatformConfig(AppConfig):
    name = "memory_platform"
    verbose_name = "Memory Platform"

    def ready(self) -> None:
        from django.core import signals
        from django.db.models.signals import post_migrate

        from memory_platform import after_response, database, rate_limits  # noqa: F401  registers its check

        post_migrate.connect(database.restrict_runtime_privileges, dispatch_uid="restrict_runtime_privileges")
        signals.request_started.connect(after_response.request_started, dispatch_uid="after_response_started")
        signals.request_finished.connect(after_response.request_finished, dispatch_uid="after_response_finished")

