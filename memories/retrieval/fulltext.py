"""Full-text search: the memories that hold the query's words, best first (docs/adr/0035),
ranked by BM25 from the tenant's own word statistics (memories.lexicon, docs/adr/0037).

One statement a search (statement), through the GIN index of each tenant's tagged lexemes
(memories.tenant_lexemes, migration 0013), or row by row for the few rows a filter leaves.
It runs in pipeline mode (started), so the caller's work in Python (a search embeds its query)
overlaps the database's. The tenant's size, which the paths are chosen by, is counted and
kept for an hour in the process (tenant_text). The ranker BM25 replaced, ts_rank_cd with tiers
of rare words estimated on a sample, stays selectable (search.lexical_ranker) to compare.
"""

from __future__ import annotations

import itertools
import math
import re
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta

import psycopg
from django.db import connection
from django.utils import timezone

from memories import lexicon
from memories.models import LIVE_SQL
from memories.retrieval.filters import SearchFilters
from memories.retrieval.ranking import Hit, memory_columns, ranked_hits, ranking_columns, usage_join
from memory_platform.config import config

_tenant_text_cache: dict = {}
COMMON_SAMPLE_ROWS = 2000
COMMON_CACHE_SECONDS = 3600

_lexeme_cache: dict[str, list[str]] = {}
LEXEME_CACHE_WORDS = 50_000


def reset_caches() -> None:
    """Forget what this process knows of tenants (tenant_text) and words (word_lexemes)."""
    _tenant_text_cache.clear()
    _lexeme_cache.clear()


@dataclass
class TenantText:
    shares: dict  # lexeme -> share of the tenant's memories holding it (>= 2%)
    rows: int = 0  # its live (active, not deleted) memories
    share: float = 0.0  # rows as a share of the table's


def tenant_text(org_id) -> TenantText:
    """What full-text search needs to know about a tenant, estimated on a sample of
    COMMON_SAMPLE_ROWS rows (and one count) and kept for an hour in the process. The vector
    search reads its size too (size.candidate_count, vector.hnsw_ef_search)."""
    now = timezone.now()
    cached = _tenant_text_cache.get(str(org_id))
    if cached and now - cached[0] < timedelta(seconds=COMMON_CACHE_SECONDS):
        return cached[1]
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT count(*) FROM memories WHERE org_id = %s AND {LIVE_SQL}", [org_id])
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
    if len(_tenant_text_cache) >= 10_000:  # many tenants: start over rather than grow without bound
        _tenant_text_cache.clear()
    _tenant_text_cache[str(org_id)] = (now, text)
    return text


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


def lexeme_query(groups: list[list[str]], tag: str = "") -> str:
    """A tsquery, as text: any of the groups, each holding all of its lexemes, each lexeme
    prefixed with `tag`. Lexemes are quoted, so none is read as an operator or normalised
    again."""

    def quoted(lexeme: str) -> str:
        return "'" + (tag + lexeme).replace("\\", "\\\\").replace("'", "''") + "'"

    return " | ".join("(" + " & ".join(quoted(lexeme) for lexeme in group) + ")" for group in groups if group)


def tagged_query(org_id, groups: list[list[str]]) -> str:
    """lexeme_query for memories.tenant_lexemes: every lexeme tagged with the tenant, so its
    GIN index reads this tenant's posting lists only."""
    return lexeme_query(groups, tenant_tag(org_id))


def rare_words(org_id, words: list[str]) -> list[str]:
    """The query's RARE_WORDS rarest words in this tenant (an IDF in miniature): on a large
    tenant, a common word of a long query matches a large part of it, while the rarest words
    carry nearly all of the ranking anyway. Full text's later tiers use only these."""
    shares = tenant_text(org_id).shares
    lexemes = {word: found for word, found in word_lexemes(words).items() if found}  # stop words have none
    share = {word: max(shares.get(lexeme, 0.0) for lexeme in found) for word, found in lexemes.items()}
    rarest = set(sorted(share, key=lambda word: (share[word], words.index(word)))[: config().search.rare_words])
    return [word for word in words if word in rarest]


def query_words(text: str) -> list[str]:
    """The query's words, lower case, each once, in order."""
    return list(dict.fromkeys(re.findall(r"\w+", text.lower())))


def query_lexemes(words: list[str]) -> list[str]:
    """The lexemes of the query's words ('english'), each once, in order; none for stop words."""
    lexemes = word_lexemes(words)
    return list(dict.fromkeys(lexeme for word in words for lexeme in lexemes[word]))


def idf(documents: int, frequency: int) -> float:
    """BM25's inverse document frequency (the Lucene form, never negative)."""
    frequency = min(frequency, documents)
    return math.log(1 + (documents - frequency + 0.5) / (frequency + 0.5))


# BM25 over the candidate rows a path chooses: tf is how often the row holds a query lexeme
# (its positions in search_vector), dl how many words it holds, both read from one unnest.
BM25 = """
    SELECT best.id, best.score, {ranking} FROM (
        SELECT c.id, {memory}, s.bm25 AS score
        FROM ({candidates}) c
        CROSS JOIN LATERAL (
            SELECT sum(t.idf * d.tf * (%s + 1) / (d.tf + %s * (1 - %s + %s * d.dl / %s))) AS bm25
            FROM (SELECT u.lexeme, cardinality(u.positions)::float8 AS tf,
                         sum(cardinality(u.positions)) OVER ()::float8 AS dl
                  FROM unnest(c.search_vector) u) d
            JOIN unnest(%s::text[], %s::float8[]) AS t(lexeme, idf) ON t.lexeme = d.lexeme
        ) s
        ORDER BY s.bm25 DESC, c.created_at DESC, c.id
        LIMIT %s
    ) best {usage}
    ORDER BY best.score DESC, best.created_at DESC, best.id
"""
CANDIDATE_COLUMNS = f"m.id, {memory_columns('m')}, m.search_vector"


def bm25_statement(org_id, text: str, filters: SearchFilters, k: int, small: bool) -> tuple[str, list] | None:
    """Full text ranked by BM25 (docs/adr/0037), and its parameters (None if the query has
    no words that are not stop words). IDF, N and the average length are the tenant's own
    (memories.lexicon), read before the statement in one round trip.

    On the few rows a filter leaves (small), every row holding any query word is scored: the
    top k is exact. Through the GIN index of the tenant's tagged lexemes, the rows scored are
    those holding any of the query's rarest words, as many words as hold at most
    BM25_CANDIDATE_ROWS rows together: a row holding none of them misses only the rarer
    words' weight, which the common words rarely make up. When even the rarest word is
    held by more rows, the rows holding all the words come first, then those holding the
    rarest one, at most BM25_CANDIDATE_ROWS of each.
    """
    lexemes = query_lexemes(query_words(text))
    if not lexemes:  # nothing but stop words
        return None
    search = config().search
    stats = lexicon.statistics(org_id, lexemes)
    weights = [idf(stats.documents, stats.frequency[lexeme]) for lexeme in lexemes]
    bm25 = [search.bm25_k1, search.bm25_k1, search.bm25_b, search.bm25_b, max(stats.average_length, 1.0),
            lexemes, weights, k]
    if small:
        where, params = filters.where(org_id)
        candidates = f"SELECT {CANDIDATE_COLUMNS} FROM memories m WHERE {where} AND m.search_vector @@ %s::tsquery"
        candidate_params = [*params, lexeme_query([[lexeme] for lexeme in lexemes])]
    else:
        # The tags have chosen the tenant's rows: a bitmap of its org_id would only cost.
        where, params = filters.where(org_id, tenant_index=False)
        budget = search.bm25_candidate_rows
        rarest = sorted(lexemes, key=lambda lexeme: (stats.frequency[lexeme], lexemes.index(lexeme)))
        essential, held = [], 0
        for lexeme in rarest:
            if essential and held + stats.frequency[lexeme] > budget:
                break
            essential.append(lexeme)
            held += stats.frequency[lexeme]
        matching = f"SELECT {CANDIDATE_COLUMNS} FROM memories m WHERE {where} AND m.tenant_lexemes @@ %s::tsquery"
        if held <= budget:
            candidates = f"{matching} LIMIT %s"
            candidate_params = [*params, tagged_query(org_id, [[lexeme] for lexeme in essential]), budget]
        else:
            every_word = tagged_query(org_id, [lexemes])
            candidates = (f"({matching} LIMIT %s) UNION ALL "
                          f"({matching} AND NOT m.tenant_lexemes @@ %s::tsquery LIMIT %s)")
            candidate_params = [*params, every_word, budget,
                                *params, tagged_query(org_id, [[essential[0]]]), every_word, budget]
    return (BM25.format(ranking=ranking_columns("best"), memory=memory_columns("c"), candidates=candidates, usage=usage_join("best")),
            [*candidate_params, *bm25, org_id])


def statement(org_id, text: str, filters: SearchFilters, k: int, small: bool = False,
              enough: int | None = None) -> tuple[str, list] | None:
    """The one statement full-text search runs, and its parameters (None if the query has no
    words that are not stop words): BM25 (bm25_statement) unless the configured ranker is
    ts_rank_cd (ts_rank_statement)."""
    if lexicon.ranker() == "bm25":
        return bm25_statement(org_id, text, filters, k, small)
    return ts_rank_statement(org_id, text, filters, k, small, enough)


def ts_rank_statement(org_id, text: str, filters: SearchFilters, k: int, small: bool = False,
                      enough: int | None = None) -> tuple[str, list] | None:
    """Full text as it ranked before BM25 (search.lexical_ranker "ts_rank_cd"), kept to
    compare the two. Memories matching the query's words, ranked by ts_rank_cd
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
    words = query_words(text)
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
                SELECT id, score, has_all, {memory_columns("matches")} FROM (
                    SELECT m.id, {memory_columns("m")}, m.search_vector @@ all_words AS has_all,
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
    ranked = config().search.or_matches_ranked
    return f"""
        WITH held_all AS (
            SELECT id, {memory_columns("matched")}, score FROM (
                SELECT m.id, {memory_columns("m")}, ts_rank_cd(m.search_vector, q.all_words, 1 | 32) AS score
                FROM memories m, plainto_tsquery('english', %s) AS q(all_words)
                WHERE {where} AND m.tenant_lexemes @@ %s::tsquery AND m.search_vector @@ q.all_words
                LIMIT %s
            ) matched
            ORDER BY score DESC, created_at DESC, id
            LIMIT %s
        ), held_two AS (
            SELECT m.id, {memory_columns("m")}, ts_rank_cd(m.search_vector, q.any_word, 1 | 32) AS score
            FROM memories m, (SELECT {two_of_them} AS two, websearch_to_tsquery('english', %s) AS any_word) q
            WHERE (SELECT count(*) FROM held_all) < %s
              AND {where} AND m.tenant_lexemes @@ %s::tsquery AND m.search_vector @@ q.two
              AND m.id NOT IN (SELECT id FROM held_all)
            LIMIT %s
        ), held_one AS (
            SELECT m.id, {memory_columns("m")}, ts_rank_cd(m.search_vector, q, 1 | 32) AS score
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
    """, [" ".join(words), *params, tagged_query(org_id, [holding(*rare)]) or None, config().search.all_words_ranked, k,
          *[" ".join(pair) for pair in pairs], " OR ".join(rare), k,
          *params, tagged_query(org_id, [holding(*pair) for pair in pairs]) or None, ranked,
          " OR ".join(rare), k if enough is None else min(enough, k),
          *params, tagged_query(org_id, [holding(word) for word in rare]) or None, ranked,
          k, org_id]


def shown_measure(filters: SearchFilters) -> str | None:
    """What a full-text hit shows beside its rank: its BM25 score, except to a key limited to
    some namespaces, whose scores are computed from word statistics of the whole organisation
    (probing them would tell how many memories out of its reach hold a word): rank only."""
    if filters.within:
        return None
    return "bm25" if lexicon.ranker() == "bm25" else "score"


@dataclass
class Running:
    """A full-text search under way (started): its hits once the block has ended."""

    hits: list[Hit] | None = None


@contextmanager
def started(org_id, text: str, filters: SearchFilters, k: int, small: bool = False,
            enough: int | None = None) -> Iterator[Running]:
    """Full-text search (statement) started as the block begins, its rows collected as the
    block ends: the statement goes out in pipeline mode, which does not wait for its rows, so
    what the block does in Python meanwhile (a search embeds its query) takes no time of its
    own unless it takes longer than the database. The hits are the yielded object's `hits`,
    after the block; if the block raises, the statement's rows are dropped with the error.

        with fulltext.started(org_id, query, filters, k) as text:
            embedding = cache.query_embedding(query)
        hits = text.hits
    """
    running = Running()
    sql_and_params = statement(org_id, text, filters, k, small, enough)
    if sql_and_params is None:
        yield running
        running.hits = []
        return
    with connection.cursor() as cursor:
        if psycopg.Pipeline.is_supported():
            with connection.connection.pipeline():
                cursor.execute(*sql_and_params)
                yield running
                rows = cursor.fetchall()
        else:
            cursor.execute(*sql_and_params)
            rows = cursor.fetchall()
            yield running
    running.hits = ranked_hits(((memory_id, float(score), *ranking) for memory_id, score, *ranking in rows),
                               measure=shown_measure(filters))


def search(org_id, text: str, filters: SearchFilters, k: int, small: bool = False,
           enough: int | None = None) -> list[Hit]:
    """The k memories that match the query's words best (statement)."""
    with started(org_id, text, filters, k, small, enough) as running:
        pass
    return running.hits
