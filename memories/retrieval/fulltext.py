"""Full-text search: the memories that hold the query's words, best first (docs/adr/0035),
ranked by BM25 from the tenant's own word statistics (memories.understanding.lexicon, docs/adr/0037).

One statement a search (statement), through the GIN index of each tenant's tagged lexemes
(memories.tenant_lexemes, migration 0013), or row by row for the few rows a filter leaves.
It runs in pipeline mode (started), so the caller's work in Python (a search embeds its query)
overlaps the database's. A search reads its words once (query_words) and passes them here;
a word is looked for in all its forms, as one word ("went" and "go": query_terms, docs/adr/0071).

A memory written right after one that asks, in its namespace, also holds the question's words
at BM25_ASKED_WEIGHT: a reply is found by what it answers (ASKED, docs/adr/0070), unless the
caller says the search wants no answers (`answers`: a question asking when).
"""

from __future__ import annotations

import math
import re
import uuid
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import psycopg
from django.db import connection

from memories.retrieval import neighbours
from memories.retrieval.filters import SearchFilters
from memories.retrieval.ranking import (
    Hit,
    memory_columns,
    ranked_hits,
    ranking_columns,
    usage_join,
)
from memories.understanding import lexicon
from memories.understanding.forms import other_forms
from memory_platform.config import config

_lexeme_cache: dict[str, list[str]] = {}
LEXEME_CACHE_WORDS = 50_000


def reset_caches() -> None:
    """Forget the words this process has looked up (word_lexemes)."""
    _lexeme_cache.clear()


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


def query_words(text: str) -> list[str]:
    """The query's words, lower case, each once, in order."""
    return list(dict.fromkeys(re.findall(r"\w+", text.lower())))


def query_terms(words: list[str]) -> dict[str, str]:
    """The lexemes full text looks for ('english'; none for stop words), each once, in order:
    the query words' own, then those of their other forms (memories.understanding.forms: "went"
    also looks for "go" and "gone"). Each maps to the lexeme of the word it is a form of, its
    term: a term's lexemes weigh as one word (statement)."""
    lexemes = word_lexemes(words)
    terms = {lexeme: lexeme for word in words for lexeme in lexemes[word]}
    forms = {word: forms_of for word in words if lexemes[word] and (forms_of := other_forms(word))}
    if forms:
        form_lexemes = word_lexemes(list(dict.fromkeys(form for forms_of in forms.values() for form in forms_of)))
        for word, forms_of in forms.items():
            for form in forms_of:
                for lexeme in form_lexemes[form]:
                    terms.setdefault(lexeme, lexemes[word][0])
    return terms


def idf(documents: int, frequency: int) -> float:
    """BM25's inverse document frequency (the Lucene form, never negative)."""
    frequency = min(frequency, documents)
    return math.log(1 + (documents - frequency + 0.5) / (frequency + 0.5))


# BM25 over the candidate rows a path chooses: tf is how often the row holds a query lexeme
# (its positions in search_vector), dl how many words it holds, both read from one unnest.
BM25 = """
    {pool}
    SELECT best.id, best.score, {ranking} FROM (
        SELECT c.id, {memory}, s.bm25 AS score
        FROM ({candidates}) c
        CROSS JOIN LATERAL (
            SELECT sum(t.idf * d.tf * (%s + 1) / (d.tf + %s * (1 - %s + %s * d.dl / %s))) AS bm25
            FROM ({words}) d
            JOIN unnest(%s::text[], %s::float8[]) AS t(lexeme, idf) ON t.lexeme = d.lexeme
        ) s
        ORDER BY s.bm25 DESC, c.created_at DESC, c.id
        LIMIT %s
    ) best {usage}
    ORDER BY best.score DESC, best.created_at DESC, best.id
"""
OWN_WORDS = """
    SELECT u.lexeme, cardinality(u.positions)::float8 AS tf, sum(cardinality(u.positions)) OVER ()::float8 AS dl
    FROM unnest(c.search_vector) u
"""
# A row that answers a question (ASKED) also holds the question's words, `asked` times each:
# in tf (the query's lexemes only, counted in both) and in dl.
ASKED_WORDS = """
    SELECT w.lexeme, sum(w.tf) AS tf, l.dl
    FROM (SELECT u.lexeme, cardinality(u.positions)::float8 AS tf FROM unnest(c.search_vector) u
          WHERE u.lexeme = ANY(%s::text[])
          UNION ALL
          SELECT u.lexeme, %s * cardinality(u.positions) FROM unnest(c.asked) u
          WHERE u.lexeme = ANY(%s::text[])) w
    CROSS JOIN (SELECT (SELECT sum(cardinality(u.positions)) FROM unnest(c.search_vector) u)::float8
                       + %s * coalesce((SELECT sum(cardinality(u.positions)) FROM unnest(c.asked) u), 0) AS dl) l
    GROUP BY w.lexeme, l.dl
"""
# A reply takes its subject from the question it answers ("Been playing it for a month now"
# after "How long have you been playing this game?"). The candidates a path chooses
# (matched), and the memory written right after each of them that asks (its text holds a
# "?"), neighbours' next one (neighbours.written_beside; the search's filters then apply to
# it): a row that is such an answer carries the question's search_vector as `asked`. The
# organisation is a literal in every part: on a Citus cluster that keeps the statement on one
# shard.
ASKED = """
    WITH matched AS MATERIALIZED ({candidates}),
    answers AS (
        SELECT {answer_columns}, q.search_vector AS asked
        FROM matched q
        CROSS JOIN LATERAL ({after}) after
        JOIN memories r ON r.org_id = %s AND r.id = after.id
        WHERE q.asks AND {where}
    ),
    pool AS (
        SELECT matched.*, answers.asked FROM matched LEFT JOIN answers ON answers.id = matched.id
        UNION ALL
        SELECT answers.* FROM answers WHERE NOT EXISTS (SELECT 1 FROM matched WHERE matched.id = answers.id)
    )
"""


def candidate_columns(alias: str, answering: bool) -> str:
    """What BM25 and the ranking read of a candidate row `alias`; when answers are looked
    up (ASKED), also what the lookup reads: its namespace, and whether it asks."""
    columns = f"{alias}.id, {memory_columns(alias)}, {alias}.search_vector"
    return f"{columns}, {alias}.scope, strpos({alias}.content, '?') > 0 AS asks" if answering else columns


def statement(org_id, words: Sequence[str], filters: SearchFilters, k: int,
              small: bool = False, answers: bool = True) -> tuple[str, list] | None:
    """The one statement full-text search runs, ranking by BM25 (docs/adr/0037), and its
    parameters (None if the query has no words that are not stop words). IDF, N and the average length are the tenant's own
    (memories.understanding.lexicon), read before the statement in one round trip.

    On the few rows a filter leaves (small), every row holding any query word is scored: the
    top k is exact. Through the GIN index of the tenant's tagged lexemes, the rows scored are
    those holding any of the query's rarest words, as many words as hold at most
    BM25_CANDIDATE_ROWS rows together: a row holding none of them misses only the rarer
    words' weight, which the common words rarely make up. When even the rarest word is
    held by more rows, the rows holding all the words come first, then those holding the
    rarest one, at most BM25_CANDIDATE_ROWS of each.
    """
    terms = query_terms(list(words))
    if not terms:  # nothing but stop words
        return None
    lexemes = list(terms)
    search = config().search
    stats = lexicon.statistics(org_id, lexemes)
    # A word's forms are one word: IDF from the memories holding any of them (their counts
    # added up: a memory rarely holds two forms of a word).
    term_frequency = Counter()
    for lexeme, term in terms.items():
        term_frequency[term] += stats.frequency[lexeme]
    weights = [idf(stats.documents, term_frequency[terms[lexeme]]) for lexeme in lexemes]
    bm25 = [search.bm25_k1, search.bm25_k1, search.bm25_b, search.bm25_b, max(stats.average_length, 1.0),
            lexemes, weights, k]
    asked = search.bm25_asked_weight if answers else 0.0
    columns = candidate_columns("m", answering=asked > 0)
    if small:
        where, params = filters.where(org_id)
        candidates = f"SELECT {columns} FROM memories m WHERE {where} AND m.search_vector @@ %s::tsquery"
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
        matching = f"SELECT {columns} FROM memories m WHERE {where} AND m.tenant_lexemes @@ %s::tsquery"
        if held <= budget:
            candidates = f"{matching} LIMIT %s"
            candidate_params = [*params, tagged_query(org_id, [[lexeme] for lexeme in essential]), budget]
        else:
            every_word = tagged_query(org_id, [lexemes])
            candidates = (f"({matching} LIMIT %s) UNION ALL "
                          f"({matching} AND NOT m.tenant_lexemes @@ %s::tsquery LIMIT %s)")
            candidate_params = [*params, every_word, budget,
                                *params, tagged_query(org_id, [[essential[0]]]), every_word, budget]
    shared = {"ranking": ranking_columns("best"), "memory": memory_columns("c"), "usage": usage_join("best")}
    if asked <= 0:
        return (BM25.format(pool="", candidates=candidates, words=OWN_WORDS, **shared),
                [*candidate_params, *bm25, org_id])
    answer_where, answer_params = filters.where(org_id, alias="r")
    pool = ASKED.format(candidates=candidates, answer_columns=candidate_columns("r", answering=True),
                        after=neighbours.written_beside("q", "next"), where=answer_where)
    return (BM25.format(pool=pool, candidates="SELECT * FROM pool", words=ASKED_WORDS, **shared),
            [*candidate_params, org_id, org_id, *answer_params, *bm25[:5], lexemes, asked, lexemes, asked, *bm25[5:],
             org_id])


def shown_measure(filters: SearchFilters) -> str | None:
    """What a full-text hit shows beside its rank: its BM25 score, except to a key limited to
    some namespaces, whose scores are computed from word statistics of the whole organisation
    (probing them would tell how many memories out of its reach hold a word): rank only."""
    return None if filters.within else "bm25"


@dataclass
class Running:
    """A full-text search under way (started): its hits once the block has ended."""

    hits: list[Hit] | None = None


@contextmanager
def started(org_id, words: Sequence[str], filters: SearchFilters, k: int, small: bool = False,
            answers: bool = True) -> Iterator[Running]:
    """Full-text search (statement) started as the block begins, its rows collected as the
    block ends: the statement goes out in pipeline mode, which does not wait for its rows, so
    what the block does in Python meanwhile (a search embeds its query) takes no time of its
    own unless it takes longer than the database. The hits are the yielded object's `hits`,
    after the block; if the block raises, the statement's rows are dropped with the error.

        with fulltext.started(org_id, words, filters, k) as text:
            embedding = cache.query_embedding(query)
        hits = text.hits
    """
    running = Running()
    sql_and_params = statement(org_id, words, filters, k, small, answers)
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


def search(org_id, words: Sequence[str], filters: SearchFilters, k: int, small: bool = False,
           answers: bool = True) -> list[Hit]:
    """The k memories that match these words (query_words) best (statement)."""
    with started(org_id, words, filters, k, small, answers) as running:
        pass
    return running.hits
