"""Retrieval: vector search, full-text search, their fusion and the final ranking (docs/adr/0035).

Every search runs inside the caller's tenant context and filters by organisation itself too.
The vector search returns the k nearest rows of the tenant whatever the tenant's size:
  * a tenant (after its cheap filters) with at most EXACT_SCAN_ROWS candidates is searched
    exactly: its rows come from a b-tree index and are sorted by distance;
  * a larger one goes through the approximate index with an iterative scan (pgvector 0.8),
    which keeps scanning past rows the tenant filter rejects until k rows are found.
The query knobs are set with SET LOCAL, so they end with the search's transaction.
"""

from __future__ import annotations

import itertools
import math
import re
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import NamedTuple

import psycopg
from django.conf import settings
from django.db import connection
from django.utils import timezone

from memories import vector_index
from memories.models import Memory

LIVE_STATUSES = ("active",)
TIME_PRESETS = {"last_day": timedelta(days=1), "last_week": timedelta(days=7), "last_month": timedelta(days=30)}


def knobs() -> dict:
    return settings.MEMORY_PLATFORM["SEARCH"]


def namespace_prefix(prefix: str) -> tuple:
    """Everything under prefix/: between "prefix/" and "prefix0" ('0' follows '/'), in byte
    order. Pattern comparisons are leakproof, so the index serves them under row-level
    security (LIKE is not)."""
    prefix = prefix.strip("/")
    return "({m}.scope = %s OR ({m}.scope ~>=~ %s AND {m}.scope ~<~ %s))", prefix, prefix + "/", prefix + "0"


@dataclass
class SearchFilters:
    """What a search may return. Defaults exclude everything not live: expired, deleted,
    superseded, merged, archived and pending-review memories."""

    agent_ids: list = field(default_factory=list)
    session_id: object = None
    namespace: str | None = None  # prefix: "memories" also matches "memories/user-1"
    # The prefixes the caller's API key is limited to (memories.access): under any of them.
    within: tuple = ()
    categories: list = field(default_factory=list)
    memory_types: list = field(default_factory=list)
    statuses: list = field(default_factory=lambda: list(LIVE_STATUSES))
    sensitivity: list = field(default_factory=list)  # allow-list; empty means any
    require_verified: bool = False
    validation_statuses: list = field(default_factory=list)
    min_confidence: float | None = None
    created_after: datetime | None = None
    created_before: datetime | None = None
    valid_at: datetime | None = None  # bi-temporal: only memories valid at this instant
    tags: list = field(default_factory=list)  # all of them
    include_expired: bool = False
    include_deleted: bool = False

    def where(self, org_id, alias: str = "m", tenant_index: bool = True) -> tuple[str, list]:
        """The SQL condition and its parameters. tenant_index=False spells the tenant test so no
        index serves it: full text's index chooses the tenant's rows itself (tenant_lexemes), and
        a bitmap of them ANDed into its matches only costs."""
        conditions = [f"{alias}.org_id = %s" if tenant_index else f"{alias}.org_id::text = %s"]
        params = [org_id if tenant_index else str(org_id)]

        def add(sql, *values):
            conditions.append(sql.replace("{m}", alias))
            params.extend(values)

        if not self.include_deleted:
            add("{m}.deleted_at IS NULL")
        if not self.include_expired:
            add("({m}.expires_at IS NULL OR {m}.expires_at > now())")
        if list(self.statuses) == ["active"]:
            add("{m}.status = 'active'")  # spelled out, so the planner matches the partial indexes
        elif self.statuses:
            add("{m}.status = ANY(%s)", list(self.statuses))
        if self.agent_ids:
            add("{m}.agent_id = ANY(%s::uuid[])", [str(a) for a in self.agent_ids])
        if self.session_id:
            add("{m}.session_id = %s", self.session_id)
        if self.namespace:
            add(*namespace_prefix(self.namespace))
        if self.within:
            conditions_and_params = [namespace_prefix(prefix) for prefix in self.within]
            add("(" + " OR ".join(sql for sql, *_ in conditions_and_params) + ")",
                *(value for _, *values in conditions_and_params for value in values))
        if self.categories:
            add("{m}.category = ANY(%s)", list(self.categories))
        if self.memory_types:
            add("{m}.memory_type = ANY(%s)", list(self.memory_types))
        if self.sensitivity:
            add("{m}.sensitivity = ANY(%s)", list(self.sensitivity))
        if self.require_verified:
            add("{m}.validation_status = 'verified'")
        if self.validation_statuses:
            add("{m}.validation_status = ANY(%s)", list(self.validation_statuses))
        if self.min_confidence is not None:
            add("{m}.confidence >= %s", self.min_confidence)
        if self.created_after:
            add("{m}.created_at >= %s", self.created_after)
        if self.created_before:
            add("{m}.created_at < %s", self.created_before)
        if self.valid_at:
            add("({m}.valid_from IS NULL OR {m}.valid_from <= %s) AND ({m}.valid_until IS NULL OR {m}.valid_until > %s)",
                self.valid_at, self.valid_at)
        for tag in self.tags:
            add("EXISTS (SELECT 1 FROM memory_tags t WHERE t.org_id = {m}.org_id AND t.memory_id = {m}.id AND t.tag = %s)",
                tag)
        return " AND ".join(conditions), params

    def narrows(self) -> bool:
        """Whether anything beyond the defaults (the tenant's live memories) limits the rows."""
        defaults = SearchFilters()
        return any(getattr(self, name) != getattr(defaults, name) for name in self.__dataclass_fields__
                   if name not in ("include_expired", "include_deleted"))

    def uses_live_index(self) -> bool:
        """The approximate index holds live rows only; it can serve only searches within them."""
        return not self.include_deleted and list(self.statuses) == ["active"]


def time_preset(name: str) -> datetime:
    return timezone.now() - TIME_PRESETS[name]


# --------------------------------------------------------------------------- the signals


@dataclass
class Hit:
    memory_id: object
    score: float  # similarity in [0, 1] for vectors, ts_rank for text
    rank: int
    row: RankingRow | None = None  # what the final ranking reads of it, if the statement returned it


class RankingRow(NamedTuple):
    """What the final ranking reads of a candidate: read as plain rows, since a search ranks
    up to a hundred candidates and loads whole records only for the few it returns."""

    pk: object
    importance: float
    confidence: float
    created_at: datetime
    retrieval_count: int
    last_retrieved_at: datetime | None


# The RankingRow columns of a signal's rows come with them, from the statement that finds
# them: a separate read of ~90 candidates cost 3.0-3.2 ms p50 of a search at 1M memories, for
# rows those statements had just read. An index scan or a full-text match reads each row's
# heap tuple anyway, and an exact scan's covering index holds the three memory columns, so
# each statement carries them through. The usage count is joined after the LIMIT.
# A memory's usage, from `usage_join`, named as Memory's manager names it.
USAGE_COLUMNS = "coalesce(u.retrieval_count, 0) AS retrieval_count, u.last_retrieved_at"


def ranking_columns(alias: str) -> str:
    """A RankingRow's columns after the id: the memory's own from `alias`, the usage from
    `usage_join`."""
    return f"{alias}.importance, {alias}.confidence, {alias}.created_at, {USAGE_COLUMNS}"


def usage_join(alias: str) -> str:
    """The usage row of each memory `alias` names, if it has one; its parameter is the
    organisation. Looked up row by row through the unique index (LIMIT 1 keeps the subquery
    from being flattened into a join): as a plain LEFT JOIN the planner hashed the whole
    organisation's usage rows for 50 memories (1 ms at 10,000 of them, and growing)."""
    return (f"LEFT JOIN LATERAL (SELECT retrieval_count, last_retrieved_at FROM memory_usage "
            f"WHERE org_id = %s AND memory_id = {alias}.id LIMIT 1) u ON true")


_kind_cache: dict = {}


def _refresh_index_cache() -> None:
    """Read what the database has (at most once a minute): the shared approximate index's kind
    and options, and the tenants with a valid index of their own."""
    now = timezone.now()
    if not _kind_cache or now - _kind_cache["at"] > timedelta(minutes=1):
        kind, options = vector_index.current_index(using="default")
        own = {org for org, valid in vector_index.tenant_indexes(using="default").items() if valid}
        _kind_cache.update(kind=kind, options=options, own=own, at=now)


def _index() -> tuple[str | None, dict]:
    _refresh_index_cache()
    return _kind_cache["kind"], _kind_cache["options"]


def has_own_index(org_id) -> bool:
    """Whether the tenant has an HNSW index of its own (memories.vector_index)."""
    _refresh_index_cache()
    return uuid.UUID(str(org_id)) in _kind_cache["own"]


def ivfflat_probes(options: dict) -> int:
    configured = knobs()["IVFFLAT_PROBES"]
    return configured or max(1, round(math.sqrt(int(options.get("lists", 100)))))


def set_local(cursor, settings_to_set: dict) -> None:
    """SET LOCAL each of these, in one round trip: they last until the transaction ends."""
    if settings_to_set:
        cursor.execute("SELECT " + ", ".join(["set_config(%s, %s, true)"] * len(settings_to_set)),
                       [part for name, value in settings_to_set.items() for part in (name, str(value))])


def _capped_count(cursor, where: str, params: list, cap: int) -> int:
    cursor.execute(f"SELECT count(*) FROM (SELECT 1 FROM memories m WHERE {where} LIMIT %s) capped",
                   [*params, cap + 1])
    return cursor.fetchone()[0]


def candidate_count(org_id, filters: SearchFilters) -> int:
    """About how many rows the search may return, enough to choose its paths against the
    "few rows" thresholds (EXACT_SCAN_ROWS for vectors, TEXT_SCAN_ROWS for full text).

    An unfiltered search takes the tenant's live rows from the hourly estimate (tenant_text):
    counting up to 12,000 rows on every search cost ~20 ms for a tenant of that size. A
    filtered one counts, up to just past the larger threshold. Either way the choice only
    decides speed: the exact path returns the true nearest rows whatever their number, and
    the iterative index scan keeps going until it has k of the tenant's rows."""
    if not filters.narrows():
        return tenant_text(org_id).rows
    cap = max(knobs()["EXACT_SCAN_ROWS"], knobs()["TEXT_SCAN_ROWS"])
    where, params = filters.where(org_id)
    with connection.cursor() as cursor:
        return _capped_count(cursor, where, params, cap)


def is_small(org_id, filters: SearchFilters) -> bool:
    """Whether the rows a search may return are few enough to rank them all by their true
    distance (at most EXACT_SCAN_ROWS): then the approximate index only costs."""
    return candidate_count(org_id, filters) <= knobs()["EXACT_SCAN_ROWS"]


@dataclass
class VectorQuery:
    sql: str
    params: list
    method: str  # "exact", "hnsw", "ivfflat", or "hnsw_tenant" (the tenant's own HNSW index)
    knobs: dict  # SET LOCAL name -> value


HNSW_EF_SEARCH_MAX = 1000  # pgvector's limit


def hnsw_ef_search(org_id, k: int) -> int:
    """The HNSW candidate list for k rows of this tenant: HNSW_EF_SEARCH, longer for a tenant
    holding a small share of the table. A pass over the index keeps only about that share of
    the candidates it visits; when that falls short of k, the iterative scan makes another
    pass, which costs more than a longer first one (at 1M memories, k 50 for a 10% tenant:
    ef_search 500 took 12.4 / 22.2 ms p50 / p95, 600 took 9.7 / 15.2)."""
    ef = max(knobs()["HNSW_EF_SEARCH"], k)
    share = tenant_text(org_id).share
    if share > 0:
        ef = max(ef, math.ceil(1.2 * k / share))
    return min(ef, HNSW_EF_SEARCH_MAX)


def vector_query(cursor, org_id, vector: list[float], filters: SearchFilters, k: int,
                 small: bool | None = None) -> VectorQuery:
    """The statement vector_search runs, and the settings it runs under. small: whether the
    candidate rows are few (is_small), if the caller knows already."""
    where, params = filters.where(org_id)
    literal = "[" + ",".join(f"{x:.7g}" for x in vector) + "]"
    exact_limit = knobs()["EXACT_SCAN_ROWS"]
    kind, options = _index() if filters.uses_live_index() else (None, {})
    own = filters.uses_live_index() and has_own_index(org_id)
    settings_for_search: dict = {}
    if own and not filters.narrows():
        small = False  # its own index holds exactly the rows searched: faster than any exact scan
    elif small is None:
        small = _capped_count(cursor, where, params, exact_limit) <= exact_limit
    if small or (kind is None and not own):
        method = "exact"
        # "+ 0" keeps the planner from ordering through the approximate index: the rows come
        # from the tenant's b-tree indexes and are sorted by their true distance.
        distance = "(m.embedding <=> %s::vector) + 0"
    else:
        method = "hnsw_tenant" if own else kind
        distance = "m.embedding <=> %s::vector"
        if kind == "ivfflat":
            settings_for_search = {"ivfflat.probes": ivfflat_probes(options),
                                   "ivfflat.iterative_scan": "relaxed_order",
                                   "ivfflat.max_probes": knobs()["IVFFLAT_MAX_PROBES"]}
        if own or kind == "hnsw":
            # The tenant's own index holds its rows only: no share of the candidates is lost.
            ef = (min(max(knobs()["TENANT_INDEX_EF_SEARCH"], k), HNSW_EF_SEARCH_MAX) if own
                  else hnsw_ef_search(org_id, k))
            settings_for_search |= {"hnsw.ef_search": ef,
                                    "hnsw.iterative_scan": "relaxed_order",
                                    "hnsw.max_scan_tuples": knobs()["HNSW_MAX_SCAN_TUPLES"]}
    # The distance is computed once a row and sorted on by its name: an expression in the
    # select list beside another in ORDER BY is computed twice for every row an exact search
    # reads (a quarter of its time at 10,000 rows). The inner query may return rows slightly out
    # of order (relaxed iterative scan); the outer one puts them in exact order.
    # The ranking's columns come with the rows: from the heap tuple an index scan reads, or
    # from the covering index an exact scan reads (memories migration 0012).
    sql = f"""
        SELECT nearest.id, 1 - nearest.distance AS similarity, {ranking_columns("nearest")}
        FROM (
            SELECT m.id, m.importance, m.confidence, m.created_at, {distance} AS distance
            FROM memories m
            WHERE {where} AND m.embedding IS NOT NULL
            ORDER BY distance
            LIMIT %s
        ) nearest {usage_join("nearest")}
        ORDER BY nearest.distance, nearest.id
    """
    return VectorQuery(sql, [literal, *params, k, org_id], method, settings_for_search)


def vector_search(org_id, vector: list[float], filters: SearchFilters, k: int,
                  small: bool | None = None) -> tuple[list[Hit], str]:
    """The k nearest memories by cosine similarity, and how they were found ("exact" or the
    index kind). Its index settings are SET LOCAL: they stay until the transaction ends (a
    savepoint's release would not end them either), and each search sets its own."""
    with connection.cursor() as cursor:
        query = vector_query(cursor, org_id, vector, filters, k, small)
        set_local(cursor, query.knobs)
        cursor.execute(query.sql, query.params)
        rows = cursor.fetchall()
    return ranked_hits((memory_id, max(0.0, min(1.0, float(similarity))), *ranking)
                       for memory_id, similarity, *ranking in rows), query.method


def ranked_hits(rows) -> list[Hit]:
    """Hits from rows of (id, score[, ranking_columns]) in the order given, equal scores
    sharing a rank ("1, 2, 2, 4"): a tie within one signal says nothing, so fusion must not
    read an order into it (the others decide)."""
    hits: list[Hit] = []
    for position, (memory_id, score, *ranking) in enumerate(rows, start=1):
        tied = hits and hits[-1].score == score
        hits.append(Hit(memory_id, score, hits[-1].rank if tied else position,
                        RankingRow(memory_id, *ranking) if ranking else None))
    return hits


_common_cache: dict = {}
COMMON_SAMPLE_ROWS = 2000
COMMON_CACHE_SECONDS = 3600


@dataclass
class TenantText:
    shares: dict  # lexeme -> share of the tenant's memories holding it (>= 2%)
    rows: int = 0  # its live (active, not deleted) memories
    share: float = 0.0  # rows as a share of the table's


def tenant_text(org_id) -> TenantText:
    """What full-text search needs to know about a tenant, estimated on a sample of
    COMMON_SAMPLE_ROWS rows (and one count) and kept for an hour in the process."""
    now = timezone.now()
    cached = _common_cache.get(str(org_id))
    if cached and now - cached[0] < timedelta(seconds=COMMON_CACHE_SECONDS):
        return cached[1]
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM memories WHERE org_id = %s AND status = 'active' AND deleted_at IS NULL",
                       [org_id])
        rows = cursor.fetchone()[0]
        cursor.execute("SELECT greatest(reltuples, 1) FROM pg_class WHERE oid = 'memories'::regclass")
        table_rows = cursor.fetchone()[0]
        # ts_stat runs its query as the caller: row-level security applies inside it too.
        cursor.execute("SELECT word, ndoc FROM ts_stat(format('SELECT search_vector FROM memories WHERE org_id = %%L "
                       "AND deleted_at IS NULL LIMIT %%s', %s::text, %s::int)) WHERE ndoc * 50 >= %s",
                       [str(org_id), COMMON_SAMPLE_ROWS, min(rows, COMMON_SAMPLE_ROWS)])
        sampled = max(min(rows, COMMON_SAMPLE_ROWS), 1)
        text = TenantText(shares={word: ndoc / sampled for word, ndoc in cursor.fetchall()},
                          rows=rows, share=min(rows / table_rows, 1.0))
    if len(_common_cache) >= 10_000:  # many tenants: start over rather than grow without bound
        _common_cache.clear()
    _common_cache[str(org_id)] = (now, text)
    return text


_lexeme_cache: dict[str, list[str]] = {}
LEXEME_CACHE_WORDS = 50_000


def word_lexemes(words: list[str]) -> dict[str, list[str]]:
    """Each word's lexemes in the 'english' configuration (none for a stop word). The database
    is asked only for words this process has not seen: queries repeat their words, and the
    statement cost a round trip before every large tenant's full-text search."""
    known = {word: _lexeme_cache[word] for word in words if word in _lexeme_cache}
    if unseen := [word for word in words if word not in known]:
        with connection.cursor() as cursor:
            cursor.execute("SELECT word, tsvector_to_array(to_tsvector('english', word)) FROM unnest(%s::text[]) word",
                           [unseen])
            found = dict(cursor.fetchall())
        if len(_lexeme_cache) + len(found) > LEXEME_CACHE_WORDS:  # a bound, not an LRU: start over
            _lexeme_cache.clear()
        _lexeme_cache.update(found)
        known |= found
    return known


def tenant_tag(org_id) -> str:
    """What a tenant's lexemes are tagged with in memories.tenant_lexemes (migration 0013):
    the first 8 hex digits of its id."""
    return str(uuid.UUID(str(org_id)))[:8]


def tagged_query(org_id, groups: list[list[str]]) -> str:
    """A tsquery, as text, for memories.tenant_lexemes: any of the groups, each holding all of
    its lexemes, every lexeme tagged with the tenant (its GIN index then reads this tenant's
    posting lists only). Lexemes are quoted, so none is read as an operator."""
    tag = tenant_tag(org_id)

    def quoted(lexeme: str) -> str:
        return "'" + (tag + lexeme).replace("\\", "\\\\").replace("'", "''") + "'"

    return " | ".join("(" + " & ".join(quoted(lexeme) for lexeme in group) + ")" for group in groups if group)


def rare_words(org_id, words: list[str]) -> list[str]:
    """The query's RARE_WORDS rarest words in this tenant (an IDF in miniature): on a large
    tenant, a common word of a long query matches a large part of it, while the rarest words
    carry nearly all of the ranking anyway. Full text's later tiers use only these."""
    shares = tenant_text(org_id).shares
    lexemes = {word: found for word, found in word_lexemes(words).items() if found}  # stop words have none
    share = {word: max(shares.get(lexeme, 0.0) for lexeme in found) for word, found in lexemes.items()}
    rarest = set(sorted(share, key=lambda word: (share[word], words.index(word)))[: knobs()["RARE_WORDS"]])
    return [word for word in words if word in rarest]


def fulltext_statement(org_id, text: str, filters: SearchFilters, k: int, small: bool = False,
                       enough: int | None = None) -> tuple[str, list] | None:
    """The one statement full-text search runs, and its parameters (None if the query has no
    words that are not stop words). Memories matching the query's words, ranked by ts_rank_cd
    with length normalisation (a long memory does not win by repeating words), best first in
    tiers:

      1. memories holding all the words;
      2. if those are fewer than k: memories holding at least two of the query's rarest words
         in this tenant (rare_words, an IDF in miniature);
      3. if the two tiers found fewer than `enough` (default k): memories holding any one of
         those words.

    On a large tenant a word matches a great many rows, which the GIN index hands over in no
    useful order: the first tier ranks at most ALL_WORDS_RANKED of them (a one-word query for
    a common word would otherwise rank a large part of the tenant), the others at most
    OR_MATCHES_RANKED each, so the cost is bounded; and the third, which reads the most rows
    for the least evidence, runs only when the caller would otherwise be short of results. A
    small tenant's rows are all read in one pass, which ignores `enough`.
    """
    words = list(dict.fromkeys(re.findall(r"\w+", text.lower())))
    lexemes = word_lexemes(words)
    if not any(lexemes.values()):  # nothing but stop words: plainto_tsquery would match nothing
        return None
    # "All the words" is plainto_tsquery: every word, none read as an operator ("tea or
    # coffee" must hold tea and coffee); "any of them" joins words with websearch's OR.
    if small:
        where, params = filters.where(org_id)
        # A small tenant's rows are matched one by one, in one pass, read through its b-tree
        # indexes. Each memory is ranked against the query it matched.
        return f"""
            SELECT best.id, best.score, {ranking_columns("best")} FROM (
                SELECT id, score, has_all, importance, confidence, created_at FROM (
                    SELECT m.id, m.importance, m.confidence, m.created_at, m.search_vector @@ all_words AS has_all,
                           ts_rank_cd(m.search_vector,
                                      CASE WHEN m.search_vector @@ all_words THEN all_words ELSE any_word END,
                                      1 | 32) AS score
                    FROM memories m, plainto_tsquery('english', %s) all_words,
                         websearch_to_tsquery('english', %s) any_word
                    WHERE {where} AND m.search_vector @@ any_word
                ) matches
                ORDER BY has_all DESC, score DESC, created_at DESC, id
                LIMIT %s
            ) best {usage_join("best")}
            ORDER BY best.has_all DESC, best.score DESC, best.created_at DESC, best.id
        """, [" ".join(words), " OR ".join(words), *params, k, org_id]
    # Through the GIN index of the tenant's tagged lexemes (tenant_lexemes, migration 0013),
    # whose posting lists hold this tenant's rows only. Each tier's index condition asks for
    # the lexemes its words must hold, and the row's search_vector is then tested against the
    # tier's own query. Each later tier runs only if the earlier ones came up short: its
    # condition is a one-time filter, checked before it reads a row. The first tier's index
    # condition holds only the rare words: on a large tenant, a common word's posting list
    # covers a large part of it, and reading it cost more than testing the rows for it.
    # The tenant is tested row by row (tenant_index=False): the tags have chosen its rows
    # already, and a bitmap of them would only cost.
    where, params = filters.where(org_id, tenant_index=False)
    rare = rare_words(org_id, words) if len(words) > 1 else words

    def holding(*chosen: str) -> list[str]:
        return [lexeme for word in chosen for lexeme in lexemes[word]]

    pairs = list(itertools.combinations(rare, 2))
    two_of_them = " || ".join(["websearch_to_tsquery('english', %s)"] * len(pairs)) or "NULL::tsquery"
    ranked = knobs()["OR_MATCHES_RANKED"]
    return f"""
        WITH held_all AS (
            SELECT id, importance, confidence, created_at, score FROM (
                SELECT m.id, m.importance, m.confidence, m.created_at, ts_rank_cd(m.search_vector, q.all_words, 1 | 32) AS score
                FROM memories m, plainto_tsquery('english', %s) AS q(all_words)
                WHERE {where} AND m.tenant_lexemes @@ %s::tsquery AND m.search_vector @@ q.all_words
                LIMIT %s
            ) matched
            ORDER BY score DESC, created_at DESC, id
            LIMIT %s
        ), held_two AS (
            SELECT m.id, m.importance, m.confidence, m.created_at, ts_rank_cd(m.search_vector, q.any_word, 1 | 32) AS score
            FROM memories m, (SELECT {two_of_them} AS two, websearch_to_tsquery('english', %s) AS any_word) q
            WHERE (SELECT count(*) FROM held_all) < %s
              AND {where} AND m.tenant_lexemes @@ %s::tsquery AND m.search_vector @@ q.two
              AND m.id NOT IN (SELECT id FROM held_all)
            LIMIT %s
        ), held_one AS (
            SELECT m.id, m.importance, m.confidence, m.created_at, ts_rank_cd(m.search_vector, q, 1 | 32) AS score
            FROM memories m, websearch_to_tsquery('english', %s) q
            WHERE (SELECT count(*) FROM held_all) + (SELECT count(*) FROM held_two) < %s
              AND {where} AND m.tenant_lexemes @@ %s::tsquery AND m.search_vector @@ q
              AND m.id NOT IN (SELECT id FROM held_all) AND m.id NOT IN (SELECT id FROM held_two)
            LIMIT %s
        )
        SELECT best.id, best.score, {ranking_columns("best")} FROM (
            SELECT * FROM (
                SELECT *, 1 AS tier FROM held_all
                UNION ALL
                SELECT *, 2 FROM held_two
                UNION ALL
                SELECT *, 3 FROM held_one
            ) matches
            ORDER BY tier, score DESC, created_at DESC, id
            LIMIT %s
        ) best {usage_join("best")}
        ORDER BY best.tier, best.score DESC, best.created_at DESC, best.id
    """, [" ".join(words), *params, tagged_query(org_id, [holding(*rare)]) or None, knobs()["ALL_WORDS_RANKED"], k,
          *[" ".join(pair) for pair in pairs], " OR ".join(rare), k,
          *params, tagged_query(org_id, [holding(*pair) for pair in pairs]) or None, ranked,
          " OR ".join(rare), k if enough is None else min(enough, k),
          *params, tagged_query(org_id, [holding(word) for word in rare]) or None, ranked,
          k, org_id]


def fulltext_search(org_id, text: str, filters: SearchFilters, k: int, small: bool = False,
                    enough: int | None = None) -> list[Hit]:
    """The k memories that match the query's words best (fulltext_statement)."""
    return fulltext_search_during(lambda: None, org_id, text, filters, k, small, enough)[0]


def fulltext_search_during(work, org_id, text: str, filters: SearchFilters, k: int, small: bool = False,
                           enough: int | None = None) -> tuple[list[Hit], object]:
    """Full-text search, and `work()` done in Python while the database runs it: the statement
    goes out in pipeline mode, which does not wait for its rows. A search embeds its query
    meanwhile, so the two take as long as the longer, not both. Returns (hits, what work
    returned)."""
    statement = fulltext_statement(org_id, text, filters, k, small, enough)
    if statement is None:
        return [], work()
    with connection.cursor() as cursor:
        if psycopg.Pipeline.is_supported():
            with connection.connection.pipeline():
                cursor.execute(*statement)
                done = work()
                rows = cursor.fetchall()
        else:
            cursor.execute(*statement)
            rows, done = cursor.fetchall(), work()
    return ranked_hits((memory_id, float(score), *ranking) for memory_id, score, *ranking in rows), done


def related(org_id, memory_ids: list, filters: SearchFilters) -> dict:
    """One hop along relationships from the given memories: {neighbour id: (from id, type)}."""
    if not memory_ids:
        return {}
    where, params = filters.where(org_id)
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            SELECT DISTINCT ON (m.id) m.id, r.from_id, r.relation_type
            FROM (
                SELECT target_id AS neighbour, source_id AS from_id, relation_type FROM memory_relationships
                WHERE org_id = %s AND source_id = ANY(%s::uuid[])
                UNION ALL
                SELECT source_id, target_id, relation_type FROM memory_relationships
                WHERE org_id = %s AND target_id = ANY(%s::uuid[])
            ) r JOIN memories m ON m.org_id = %s AND m.id = r.neighbour
            WHERE {where} AND r.relation_type NOT IN ('contradicts', 'supersedes')
            ORDER BY m.id
            """,
            [org_id, [str(i) for i in memory_ids], org_id, [str(i) for i in memory_ids], org_id, *params],
        )
        return {row[0]: (row[1], row[2]) for row in cursor.fetchall() if row[0] not in set(memory_ids)}


# --------------------------------------------------------------------------- fusion and ranking


def reciprocal_rank_fusion(signals: dict[str, list[Hit]], weights: dict[str, float], k: int) -> dict:
    """score(m) = sum over signals of weight / (k + rank): deterministic, ties broken by id."""
    fused: dict = {}
    for name, hits in signals.items():
        for hit in hits:
            fused[hit.memory_id] = fused.get(hit.memory_id, 0.0) + weights.get(name, 1.0) / (k + hit.rank)
    return fused


def recency(created_at: datetime, now: datetime, half_life_days: float) -> float:
    age_days = max((now - created_at).total_seconds() / 86400, 0.0)
    return 0.5 ** (age_days / half_life_days)


def usage(retrieval_count: int) -> float:
    return min(math.log1p(retrieval_count) / math.log1p(100), 1.0)


# The RankingRows of memories no signal's statement returned (an expansion's neighbours), in
# one statement: through the ORM (an IN list of ~100 parameters, a correlated lookup per row,
# the model's default ordering) this read took 3.8 ms p50 for 90 candidates at 1M memories,
# as SQL 2.2. The ids come as an array joined row by row: against `id = ANY(array)` the
# planner weighs every element, which took it 1 ms of the 2.
RANKING_SQL = f"""
    SELECT m.id, {ranking_columns("m")}
    FROM unnest(%s::uuid[]) AS candidate(id)
    JOIN memories m ON m.org_id = %s AND m.id = candidate.id
    {usage_join("m")}
"""


def ranking_rows(org_id, memory_ids) -> dict:
    """Each memory's RankingRow, by id (memories of other organisations, or gone, have none)."""
    with connection.cursor() as cursor:
        cursor.execute(RANKING_SQL, [[str(memory_id) for memory_id in memory_ids], org_id, org_id])
        return {row[0]: RankingRow(*row) for row in cursor.fetchall()}


@dataclass
class Result:
    memory: Memory | RankingRow  # the whole record once the search has loaded it
    score: float
    signals: dict


@dataclass
class SearchOutcome:
    results: list[Result]
    degraded: str | None = None  # "no_embedding" when the query could not be embedded
    vector_method: str | None = None
    filled_from_fulltext: int = 0


def rank(memories: dict, fused: dict, signal_details: dict, now: datetime) -> list[Result]:
    """The final score: relevance (fused, scaled to [0, 1]) blended with importance,
    confidence, recency and usage, weights from settings (RANKING_WEIGHTS). `memories` maps
    each id to its RankingRow."""
    weights = knobs()["RANKING_WEIGHTS"]
    top = max(fused.values(), default=1.0) or 1.0
    results = []
    for memory_id, relevance in fused.items():
        memory = memories.get(memory_id)
        if memory is None:
            continue
        parts = {
            "relevance": relevance / top,
            "importance": float(memory.importance),
            "confidence": float(memory.confidence),
            "recency": recency(memory.created_at, now, knobs()["RECENCY_HALF_LIFE_DAYS"]),
            "usage": usage(memory.retrieval_count),
        }
        score = sum(weights[name] * value for name, value in parts.items())
        results.append(Result(memory, round(score, 6), {**signal_details.get(memory_id, {}), "blend": {
            name: round(value, 6) for name, value in parts.items()}, "fused": round(relevance, 6)}))
    results.sort(key=lambda r: (-r.score, str(r.memory.pk)))
    return results
