"""System checks (`manage.py check`, and the commands that run them first: `run`, `migrate`):
settings whose bad value would otherwise surface only at the first request, search or index
build."""

from django.core.checks import Error, register
from django.core.exceptions import ImproperlyConfigured

from memory_platform.config import config


def configuration_is_valid() -> bool:
    try:
        config()
    except ImproperlyConfigured:
        return False
    return True


@register()
def configuration(app_configs, **kwargs) -> list[Error]:
    """MEMORY_PLATFORM as memory_platform.config reads it: every key known, present and typed."""
    try:
        config()
    except ImproperlyConfigured as exc:
        return [Error(str(exc), id="memories.E000")]
    return []


@register()
def search_settings(app_configs, **kwargs) -> list[Error]:
    from memories import embeddings, vector_index

    if not configuration_is_valid():
        return []  # `configuration` says why
    errors = []
    for check, check_id in ((vector_index.configured_kind, "memories.E001"),
                            (embeddings.query_precision, "memories.E002")):
        try:
            check()
        except ValueError as exc:
            errors.append(Error(str(exc), id=check_id))
    return errors
