from django.apps import AppConfig


class MemoryPlatformConfig(AppConfig):
    name = "memory_platform"
    verbose_name = "Memory Platform"

    def ready(self) -> None:
        from django.db.models.signals import post_migrate

        from memory_platform import database

        post_migrate.connect(database.restrict_runtime_privileges, dispatch_uid="restrict_runtime_privileges")

