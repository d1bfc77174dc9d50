"""System checks (`manage.py check`, and the commands that run them first: `run`, `migrate`):
settings whose bad value would otherwise surface only at the first search or index build."""

from django.core.checks import Error, register


@register()
def search_settings(app_configs, **kwargs) -> list[Error]:
    from memories import embeddings, vector_index

    errors = []
    for check, check_id in ((vector_index.configured_kind, "memories.E001"),
                            (embeddings.query_precision, "memories.E002")):
        try:
            check()
        except ValueError as exc:
            errors.append(Error(str(exc), id=check_id))
    return errors
