"""The product's own knobs as one typed, read-only object: `config().search.exact_scan_rows`.

Built from the Django setting MEMORY_PLATFORM, where memory_platform/settings/base.py reads
each knob from its environment variable (docs/configuration.md), so override_settings and
pytest's `settings` fixture change it too. A field's key in that setting is its name in upper
case (`search.exact_scan_rows` is MEMORY_PLATFORM["SEARCH"]["EXACT_SCAN_ROWS"]). The object is
built at its first use and again after Django's setting_changed signal says MEMORY_PLATFORM
changed; a setting changed in place, without the signal, is not seen. A missing or unknown key,
or a value of the wrong type, raises ImproperlyConfigured naming the key.

What a value means beyond its type (a vector index kind, a query precision, a rate's syntax) is
checked where it is used, by the system checks (memories/checks.py, memory_platform/rate_limits.py),
which `manage.py run` and `migrate` run first.
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.core.signals import setting_changed

SETTING = "MEMORY_PLATFORM"


def _weights(*names: str):
    """A field holding one weight for each of `names`, no other."""
    return field(metadata={"names": names})


@dataclass(frozen=True)
class SearchConfig:
    """Retrieval (docs/adr/0035): how the vector search finds k rows for tenants of every size,
    how signals are fused and how the final score blends relevance with the rest."""

    # A search whose tenant (after cheap filters) has at most this many rows is exact.
    exact_scan_rows: int
    # Full text on at most this many rows left by a search's filters matches them one by one
    # instead of through the GIN index, which finds the tenant's matches first and applies
    # the filters after. An unfiltered search always takes the index: its posting lists hold
    # the tenant's rows only (memories migration 0013).
    text_scan_rows: int
    # hnsw.ef_search of a search through the shared HNSW index: at least the candidates asked
    # for, longer for a tenant holding a small share of the table, at most pgvector's 1000.
    hnsw_ef_search: int
    # A tenant holding at least this many live memories gets an HNSW index of its own (the
    # tenant_indexes_max largest such tenants; memories.vectors.index.sync_tenant_indexes),
    # searched with tenant_index_ef_search: no other tenant's rows are in it to skip. An
    # unfiltered search of such a tenant takes it even below exact_scan_rows (at 10,000
    # rows: 2.7 ms and recall 0.998, against 8.8 ms for the exact scan). A tenant holding this
    # many live store items gets another, of them alone, which its store searches walk
    # (docs/adr/0060).
    tenant_index_rows: int
    tenant_indexes_max: int
    tenant_index_ef_search: int
    # How far an iterative HNSW scan may go to find enough rows of the tenant.
    hnsw_max_scan_tuples: int
    # IVFFlat probes; 0 means the square root of the index's lists, the usual balance of recall
    # and speed. ivfflat_max_probes is the iterative scan's ceiling.
    ivfflat_probes: int
    ivfflat_max_probes: int
    # BM25's term-frequency saturation (k1) and document-length normalisation (b).
    bm25_k1: float
    bm25_b: float
    # BM25 on a large tenant scores the memories holding the query's rarest words, as many of
    # those words as hold at most this many memories together (at least the rarest one).
    bm25_candidate_rows: int
    # A memory written right after one that asks (its text holds a "?") also holds, for BM25,
    # the question's words at this weight: a reply takes its subject from what it answers
    # (memories.retrieval.fulltext, docs/adr/0070); 0 turns it off.
    bm25_asked_weight: float
    # Candidates each signal contributes before fusion.
    candidates: int
    # Reciprocal rank fusion: each signal adds weight / (rrf_k + rank). 25, not the 60 of
    # fusing deep independent runs: each signal here ranks 50 candidates and several rank by
    # the same query's meaning, and at 60 the curve is so flat that their agreement low down
    # outvotes one signal's clear best (docs/adr/0068).
    rrf_k: int
    rrf_weights: Mapping[str, float] = _weights("vector", "fulltext", "graph", "neighbours", "time",
                                                "time_vector", "rocchio", "session")
    # A hybrid search brings the memories written just before and after its best this many
    # results in their namespace (memories.retrieval.neighbours); 0 turns it off.
    neighbour_seeds: int
    # A hybrid search for a query naming one person who speaks in the namespaces searched
    # weighs the fused relevance of memories in others' words by this (memories.retrieval.
    # speakers); 1 turns it off.
    speaker_others_weight: float
    # A hybrid search for a query asking for what goes by a name ("What books has Tim read?";
    # memories.understanding.asks) weighs the fused relevance of memories that name nothing by
    # this (memories.retrieval.naming); 1 turns it off.
    nameless_weight: float
    # A hybrid search queries meaning a second time, moved towards the mean embedding of its
    # best rocchio_seeds results (query + rocchio_blend x mean; memories.retrieval.rocchio),
    # weighed in fusion as rrf_weights["rocchio"] (0 turns it off).
    rocchio_seeds: int
    rocchio_blend: float
    # A hybrid search ranks by meaning the memories of the sessions (namespace and event time)
    # of its best results, this many sessions (memories.retrieval.sessions), weighed in fusion
    # as rrf_weights["session"]; 0 turns it off.
    session_seeds: int
    # The final score: relevance (fused) blended with these, recency halving every
    # recency_half_life_days; strength is how well the memory is held (memories.lifecycle.strength).
    ranking_weights: Mapping[str, float] = _weights("relevance", "importance", "confidence", "recency", "usage",
                                                    "strength")
    recency_half_life_days: float
    # How long a query's embedding is kept in Redis.
    query_embedding_cache_seconds: int
    # The model that embeds search queries: "float32", the model memories are embedded
    # with, or "int8", the same model quantized (memories.vectors.embeddings.quantized_graph): a
    # query embeds in less than half the time, and its top 10 holds about 9 of
    # float32's 10 (benchmarks/search/results-query-precision.json; docs/adr/0035).
    query_embedding_precision: str


@dataclass(frozen=True)
class RateLimitConfig:
    """Rate limits and sign-in lockouts, counted in Redis (memory_platform/rate_limits.py). A rate
    is text, "requests/window" (600/min, 50/s, 20/10s), or "off" for none. With Redis unreachable
    they are not enforced: requests are served."""

    # Every request of one API key; the burst rate caps how fast the sustained one is spent.
    api_key: str
    api_key_burst: str
    # Also counted, per key, for the heavier requests: search, retrieve, store search and
    # replay (each embeds a query), and batch creates (up to batch_limit memories each).
    search: str
    batch: str
    # API requests without a valid key (missing, unknown, revoked), per client address.
    unauthenticated: str
    # Console (and admin) sign-in: after this many wrong passwords for one username, or from
    # one address, within the window, sign-in is refused for sign_in_lockout_seconds.
    sign_in_failures_per_username: int
    sign_in_failures_per_address: int
    sign_in_window_seconds: int
    sign_in_lockout_seconds: int
    # After Redis fails, how long this process serves requests without asking it again.
    redis_retry_seconds: int


@dataclass(frozen=True)
class PlatformConfig:
    """All of settings.MEMORY_PLATFORM: the top-level knobs, `search` and `rate_limits`."""

    # Vector index on memories.embedding: "hnsw" or "ivfflat". Changing it later takes
    # `manage.py rebuild_vector_index`. The HNSW graph's degree and build-time candidate list;
    # IVFFlat's lists (about rows / 1000 up to 1M rows, sqrt(rows) beyond).
    vector_index: str
    hnsw_m: int
    hnsw_ef_construction: int
    ivfflat_lists: int
    # A new memory whose cosine similarity to a live memory of the same agent and namespace
    # reaches this is recorded as a near-duplicate candidate for review.
    near_duplicate_similarity: float
    # When a session closes, two of its memories of the same agent and namespace whose cosine
    # similarity reaches this are proposed for merging (memories.lifecycle.consolidation).
    consolidation_similarity: float
    # Weight of one usefulness signal in the moving average of usefulness_score.
    feedback_weight: float
    # Most memories one batch create may carry.
    batch_limit: int
    search: SearchConfig
    # How often retrievals counted in Redis are written to PostgreSQL (memory_usage).
    retrievals_flush_seconds: int
    # Spec §1's hot cache: the top memories of each agent in a Redis sorted set, how many
    # and for how long.
    hot_cache_size: int
    hot_cache_ttl_seconds: int
    # The nightly decay (memories.lifecycle.decay) archives a live memory whose strength
    # (memories.lifecycle.strength) fell below this; the weak list shows those below weak_strength.
    decay_threshold: float
    weak_strength: float
    # Largest request body the API reads, in bytes (413 beyond).
    max_request_bytes: int
    # Largest value a store item may hold, as JSON text in bytes (a 422 naming `value` beyond;
    # each of the item's versions keeps its value too).
    store_value_max_bytes: int
    # The reverse proxies in front, as comma-separated addresses or networks ("10.0.0.5,
    # 10.1.0.0/16"): from these alone X-Forwarded-For names the client (rate limits, sign-in
    # lockouts, the access log; memory_platform.security.client_address). Empty: none.
    proxy_addresses: str
    rate_limits: RateLimitConfig

    @classmethod
    def from_setting(cls, values: Mapping) -> PlatformConfig:
        return _build(cls, values, SETTING)


@functools.cache
def config() -> PlatformConfig:
    """settings.MEMORY_PLATFORM as a PlatformConfig, built once per value of the setting."""
    return PlatformConfig.from_setting(getattr(settings, SETTING))


def problem() -> ImproperlyConfigured | None:
    """Why the setting cannot be read as a PlatformConfig, or None: for the system checks, which
    report it once (memories.checks) and skip their own checks of the values meanwhile."""
    try:
        config()
    except ImproperlyConfigured as exc:
        return exc
    return None


def _forget_when_changed(*, setting: str, **kwargs) -> None:
    if setting == SETTING:
        config.cache_clear()


setting_changed.connect(_forget_when_changed, dispatch_uid="memory_platform.config")


# --------------------------------------------------------------------------- building it


def _build(cls: type, values, path: str):
    if not isinstance(values, Mapping):
        raise ImproperlyConfigured(f"{path} must be a dict, not {values!r}")
    fields = {item.name.upper(): item for item in dataclasses.fields(cls)}
    for key in values:
        if key not in fields:
            raise ImproperlyConfigured(f"{path}[{key!r}] is not a setting (known: {', '.join(fields)})")
    types_ = typing.get_type_hints(cls)
    arguments = {}
    for key, item in fields.items():
        if key not in values:
            raise ImproperlyConfigured(f"{path}[{key!r}] is missing")
        arguments[item.name] = _value(values[key], types_[item.name], f"{path}[{key!r}]", item)
    return cls(**arguments)


def _value(value, kind, path: str, item: dataclasses.Field):
    if dataclasses.is_dataclass(kind):
        return _build(kind, value, path)
    if typing.get_origin(kind) is Mapping:
        return _weights_value(value, path, item.metadata["names"])
    if kind is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        expected = "an integer"
    elif kind is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        expected = "a number"
    elif kind is str:
        if isinstance(value, str):
            return value
        expected = "text"
    else:
        raise TypeError(f"no conversion for {path}'s type {kind!r}")
    raise ImproperlyConfigured(f"{path} must be {expected}, not {value!r}")


def _weights_value(value, path: str, names: tuple[str, ...]) -> Mapping[str, float]:
    if not isinstance(value, Mapping):
        raise ImproperlyConfigured(f"{path} must be a dict of {', '.join(names)}, not {value!r}")
    for name in value:
        if name not in names:
            raise ImproperlyConfigured(f"{path}[{name!r}] is not a weight (known: {', '.join(names)})")
    weights = {}
    for name in names:
        if name not in value:
            raise ImproperlyConfigured(f"{path}[{name!r}] is missing")
        number = value[name]
        if not isinstance(number, (int, float)) or isinstance(number, bool):
            raise ImproperlyConfigured(f"{path}[{name!r}] must be a number, not {number!r}")
        weights[name] = float(number)
    return types.MappingProxyType(weights)
