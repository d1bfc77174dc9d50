"""System checks (`manage.py check`, and the commands that run them first: `run`, `migrate`):
settings whose bad value would otherwise surface only at the first request, search or index
build."""

from django.core.checks import Error, register

from memory_platform import config


@register()
def configuration(app_configs, **kwargs) -> list[Error]:
    """MEMORY_PLATFORM as memory_platform.config reads it: every key known, present and typed."""
    problem = config.problem()
    return [Error(str(problem), id="memories.E000")] if problem else []


@register()
def search_settings(app_configs, **kwargs) -> list[Error]:
    from memories.vectors import embeddings
    from memories.vectors import index as vector_index

    if config.problem():
        return []  # `configuration` says why
    errors = []
    for check, check_id in ((vector_index.configured_kind, "memories.E001"),
                            (embeddings.query_precision, "memories.E002")):
        try:
            check()
        except ValueError as exc:
            errors.append(Error(str(exc), id=check_id))
    if (rrf_k := config.config().search.rrf_k) < 0:  # weight / (k + rank) divides by zero at -1
        errors.append(Error(f"MEMORY_PLATFORM_RRF_K must be 0 or more, not {rrf_k!r}", id="memories.E005"))
    if (asked := config.config().search.bm25_asked_weight) < 0:  # a question's words would count against its reply
        errors.append(Error(f"MEMORY_PLATFORM_BM25_ASKED_WEIGHT must be 0 or more, not {asked!r}", id="memories.E006"))
    return errors


@register()
def lifecycle_settings(app_configs, **kwargs) -> list[Error]:
    """The decay threshold and the weak list's strength are strengths, the consolidation's
    similarity a cosine worth proposing: above 0, at most 1."""
    if config.problem():
        return []
    knobs = config.config()
    return [Error(f"MEMORY_PLATFORM_{name.upper()} must be above 0 and at most 1, not {value!r}", id="memories.E004")
            for name, value in (("decay_threshold", knobs.decay_threshold), ("weak_strength", knobs.weak_strength),
                                ("consolidation_similarity", knobs.consolidation_similarity))
            if not 0 < value <= 1]
