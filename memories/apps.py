from django.apps import AppConfig


class MemoriesConfig(AppConfig):
    name = "memories"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from memories import checks  # noqa: F401  registers the settings checks
        from memories.api import schema  # noqa: F401  registers the API key scheme with drf-spectacular
