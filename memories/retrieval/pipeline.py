"""A search, top to bottom: read the query -> signals -> fusion -> rank -> load (docs/adr/0035).

The query is read once (QueryReading: its words, intent, period and the person it names) and
every signal is given that reading. The signals are the rows of SIGNALS, run in order: each
ranks memories its own way into Hits (ranking.Hit). Those not seeded by the fusion run first
and are fused together (reciprocal rank, weighted by signal: RRF_WEIGHTS); each seeded one
starts from the best memories of the fusion so far and is fused in after it. The final rank
blends the fused relevance with importance, confidence, recency and usage; whole records are
loaded for the winners only. A new signal is a module whose search returns Hits, and a row
of SIGNALS.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from django.utils import timezone

from memories.caching import cache
from memories.retrieval import (
    expansion,
    fulltext,
    naming,
    neighbours,
    ranking,
    records,
    rocchio,
    sessions,
    size,
    speakers,
    timeframe,
    vector,
)
from memories.retrieval.filters import SearchFilters
from memories.retrieval.ranking import Hit, SearchOutcome
from memories.retrieval.speakers import Speaker
from memories.understanding import asks
from memories.understanding import intent as intents
from memories.understanding import when
from memories.understanding.when import Period
from memories.vectors import embeddings
from memory_platform.config import config

# The namespace store's search (memories.store.search): vector matches only, never filled
# up by full text, which answers only when the query cannot be embedded.
VECTOR_ONLY = "vector_only"
EMBEDDING_MODES = ("hybrid", "vector", VECTOR_ONLY)

# A "why" question follows these edges from its best results (spec §4's causal chain).
CAUSAL_CHAIN = ("causal", "derived_from", "supports")
CAUSAL_HOPS = 2  # the cause of a result, and the cause of that cause


@dataclass(frozen=True)
class QueryReading:
    """What a search reads of its query, once, for every signal."""

    query: str
    words: str  # what full text and meaning match: the query without the speakers it names
    terms: tuple[str, ...]  # those words as full text reads them (fulltext.query_words)
    intent: str  # memories.understanding.intent
    period: Period | None = None  # the period it names (memories.understanding.when)
    speaker: Speaker | None = None  # who it is about, of the people who speak in the namespaces searched
    asks_for: str | None = None  # the class it asks for, if its members go by a name (memories.understanding.asks)

    @classmethod
    def of(cls, query: str, *, period: Period | None = None, speaker: Speaker | None = None,
           named: tuple[str, ...] = (), asks_for: str | None = None) -> QueryReading:
        """`named`: every name it says of the people who speak there (speakers.named); the
        speaker's alone if not given."""
        named = named or ((speaker.name,) if speaker else ())
        words = speakers.unnamed(query, named) if named else query
        return cls(query, words, tuple(fulltext.query_words(words)), intents.classify(query), period, speaker,
                   asks_for)


def widens(mode: str, threshold: float | None) -> bool:
    """Whether a search reaches beyond its query's own matches (the period it names, the
    causal chain of a "why", the neighbours of its best results, the person it names): a
    hybrid search without a similarity threshold."""
    return mode == "hybrid" and threshold is None


def read_query(org_id, query: str, filters: SearchFilters, *, wide: bool, now: datetime | None = None) -> QueryReading:
    """The query read once: its words and intent; for a search that widens, also the period it
    names (counted back from `now` if relative), who it is about of the people who speak in
    the namespaces searched (speakers) and the class it asks for if its members go by a name
    (asks)."""
    if not wide:
        return QueryReading.of(query)
    speaker, named = (speakers.named(org_id, query, filters) if config().search.speaker_others_weight < 1
                      else (None, ()))
    asks_for = asks.named_class(query) if config().search.nameless_weight < 1 else None
    return QueryReading.of(query, period=when.period(query, now or timezone.now()), speaker=speaker, named=named,
                           asks_for=asks_for)


NOT_EMBEDDED = object()


@dataclass
class Search:
    """One search under way: what was asked, what was read of its query, how many rows it may
    return (which picks each signal's path), and what its signals found so far."""

    org_id: object
    reading: QueryReading
    filters: SearchFilters
    limit: int
    mode: str  # "hybrid", "vector", "fulltext" or VECTOR_ONLY
    expand: int
    threshold: float | None  # vector matches at least this similar only
    k: int  # candidates each signal ranks
    exact: bool  # few enough rows to rank all by their true distance (vector)
    small: bool  # a filter leaves few enough rows to match them one by one (full text)
    model: str | None  # the model whose vectors the memories hold, if the mode embeds the query
    # Whether a switch of model is moving vectors (docs/adr/0050): the vector signal then
    # compares with `model`'s vectors wherever they are, in memories or kept beside them.
    switching: bool = False
    hits: dict[str, list[Hit]] = field(default_factory=dict)
    fused: dict = field(default_factory=dict)
    vector_method: str | None = None
    filled_from_fulltext: int = 0
    embedding: object = field(default=NOT_EMBEDDED, repr=False)  # the query's, once embed() has run
    window: timeframe.Window | None = None  # the period's memories, once period_window() has run

    @property
    def wide(self) -> bool:
        return widens(self.mode, self.threshold)

    def embed(self) -> list[float] | None:
        """The query's embedding (of its words), computed once; None if the mode ranks no
        meaning or the query cannot be embedded."""
        if self.embedding is NOT_EMBEDDED:
            self.embedding = cache.query_embedding(self.reading.words, self.model) if self.model else None
        return self.embedding

    def period_window(self) -> timeframe.Window:
        """The memories of the period the query names, sized once for both time signals."""
        if self.window is None:
            self.window = timeframe.window(self.org_id, self.filters, self.reading.period)
        return self.window

    @property
    def degraded(self) -> str | None:
        return "no_embedding" if self.mode in EMBEDDING_MODES and self.embed() is None else None


def search_begun(*, org_id, query: str, filters: SearchFilters, limit: int, mode: str, expand: int = 0,
                 threshold: float | None = None, now: datetime | None = None) -> Search:
    """A search as asked, its query read and its candidate rows sized, before any signal runs."""
    knobs = config().search
    reading = read_query(org_id, query, filters, wide=widens(mode, threshold), now=now)
    standing = embeddings.active_standing() if mode in EMBEDDING_MODES else ("", "")
    rows = size.candidate_count(org_id, filters)
    return Search(org_id=org_id, reading=reading, filters=filters, limit=limit, mode=mode, expand=int(expand),
                  threshold=threshold, k=max(limit, knobs.candidates), exact=rows <= knobs.exact_scan_rows,
                  # Full text: match row by row the few rows a filter leaves (docs/adr/0035).
                  small=filters.narrows() and rows <= knobs.text_scan_rows,
                  # Read (at most every few seconds) before a full-text statement goes out: the
                  # connection is the pipeline's until it ends.
                  model=standing[0] if mode in EMBEDDING_MODES else None, switching=bool(standing[1]))


# --------------------------------------------------------------------------- the signals


def takes_answers(search: Search) -> bool:
    """Whether full text (and the period's memories by words) scores a reply with the words of
    the question it answers: not for a question asking when, whose answer says the time in its
    own words (docs/adr/0070)."""
    return search.reading.intent != "when"


def ranks_words(search: Search) -> bool:
    return search.mode in ("hybrid", "fulltext")


def words(search: Search) -> list[Hit]:
    """Full text of the query's words. A hybrid search embeds its query meanwhile, for the
    vector signal next: the statement runs in the database while the model runs here, so the
    two take as long as the longer of them (docs/adr/0035, "The critical path of a search")."""
    with fulltext.started(search.org_id, search.reading.terms, search.filters, search.k, search.small,
                          answers=takes_answers(search)) as text:
        if search.mode == "hybrid":
            search.embed()
    return text.hits


def ranks_meaning(search: Search) -> bool:
    return search.mode in EMBEDDING_MODES and search.embed() is not None


def meaning(search: Search) -> list[Hit]:
    """The memories nearest the query's embedding, those at least `threshold` similar if
    the search sets one."""
    hits, search.vector_method = vector.search(search.org_id, search.embed(), search.filters, search.k, search.exact,
                                               vectors_of=search.model if search.switching else None)
    if search.threshold is not None:
        hits = [hit for hit in hits if hit.score >= search.threshold]
    return hits


def words_stand_in(search: Search) -> bool:
    """A vector search answers from full text when its query cannot be embedded; and (spec
    §1) fills up with it when fewer than `limit` memories have a vector match, unless it
    asked for vector matches only (VECTOR_ONLY) or for a similarity threshold."""
    if search.mode not in ("vector", VECTOR_ONLY):
        return False
    if search.embed() is None:
        return True
    return search.mode == "vector" and search.threshold is None and len(search.hits["vector"]) < search.limit


def words_for_meaning(search: Search) -> list[Hit]:
    hits = fulltext.search(search.org_id, search.reading.terms, search.filters, search.k, search.small,
                           answers=takes_answers(search))
    if search.embed() is None:
        return hits
    seen = {hit.memory_id for hit in search.hits["vector"]}
    extra = [hit for hit in hits if hit.memory_id not in seen][: search.limit - len(seen)]
    search.filled_from_fulltext = len(extra)
    return extra


def names_a_period(search: Search) -> bool:
    return search.wide and search.reading.period is not None and config().search.rrf_weights["time"] > 0


def period(search: Search) -> list[Hit]:
    return timeframe.search(search.org_id, search.reading.terms, search.period_window(), search.k,
                            answers=takes_answers(search))


def names_a_period_it_means(search: Search) -> bool:
    return (search.wide and search.reading.period is not None and config().search.rrf_weights["time_vector"] > 0
            and search.embed() is not None)


def period_by_meaning(search: Search) -> list[Hit]:
    return timeframe.nearest(search.org_id, search.embed(), search.period_window(), search.k,
                             vectors_of=search.model if search.switching else None)


def follows_relationships(search: Search) -> bool:
    """When asked to (expand), or for a "why" question, along the causal chain."""
    return bool(search.expand) or (search.wide and search.reading.intent == "why"
                                   and config().search.rrf_weights["graph"] > 0)


def relationships(search: Search) -> list[Hit]:
    seeds = ranking.best(search.fused, search.limit)
    if search.expand:
        return expansion.search(search.org_id, seeds, search.filters, hops=search.expand)
    return expansion.search(search.org_id, seeds, search.filters, types=CAUSAL_CHAIN, hops=CAUSAL_HOPS)


def shares_sessions(search: Search) -> bool:
    knobs = config().search
    return (search.wide and knobs.session_seeds > 0 and knobs.rrf_weights["session"] > 0
            and not search.switching and search.embed() is not None)


def sessions_of_results(search: Search) -> list[Hit]:
    """The memories of the sessions of the fusion's best memories (sessions), nearest the
    query first; a session is as good as its best memory, so the fusion's whole order decides."""
    return sessions.search(search.org_id, search.embed(), ranking.best(search.fused, len(search.fused)),
                           search.filters, config().search.session_seeds, search.k)


def moves_towards_results(search: Search) -> bool:
    knobs = config().search
    return (search.wide and knobs.rocchio_seeds > 0 and knobs.rrf_weights["rocchio"] > 0
            and rocchio.applies(search.reading.query) and search.embed() is not None)


def meaning_of_results(search: Search) -> list[Hit]:
    return rocchio.search(search.org_id, search.embed(), ranking.best(search.fused, config().search.rocchio_seeds),
                          search.filters, search.k, search.exact, config().search.rocchio_blend)


def brings_neighbours(search: Search) -> bool:
    return search.wide and config().search.neighbour_seeds > 0 and config().search.rrf_weights["neighbours"] > 0


def written_nearby(search: Search) -> list[Hit]:
    speaker = search.reading.speaker
    return neighbours.search(search.org_id, ranking.best(search.fused, config().search.neighbour_seeds),
                             search.filters, speaker.entity_ids if speaker else (),
                             answers_name=search.reading.asks_for is not None)


@dataclass(frozen=True)
class Signal:
    name: str  # its hits' name in the fusion's weights and in each result's signals
    seeded: bool  # starts from the best memories of the fusion of the signals before it
    applies: Callable[[Search], bool]  # given the reading and the request
    search: Callable[[Search], list[Hit]]


SIGNALS = (
    # Full text first: a hybrid search's query is embedded while its statement runs.
    Signal("fulltext", seeded=False, applies=ranks_words, search=words),
    Signal("vector", seeded=False, applies=ranks_meaning, search=meaning),
    # A vector search's full text: in place of the vector signal, or filling up after it.
    Signal("fulltext", seeded=False, applies=words_stand_in, search=words_for_meaning),
    Signal("time", seeded=False, applies=names_a_period, search=period),
    Signal("time_vector", seeded=False, applies=names_a_period_it_means, search=period_by_meaning),
    Signal("graph", seeded=True, applies=follows_relationships, search=relationships),
    Signal("session", seeded=True, applies=shares_sessions, search=sessions_of_results),
    Signal("rocchio", seeded=True, applies=moves_towards_results, search=meaning_of_results),
    Signal("neighbours", seeded=True, applies=brings_neighbours, search=written_nearby),
)


def run_signals(search: Search, signals: tuple[Signal, ...] = SIGNALS) -> None:
    """Every signal that applies, in order, into search.hits, with one fusion per stage into
    search.fused: the signals not seeded are fused together, and each seeded one after it has
    run on the fusion before it (which it needs something in to start from)."""
    weights, rrf_k = config().search.rrf_weights, config().search.rrf_k
    stage: dict[str, list[Hit]] = {}
    for signal in signals:
        if signal.seeded:
            if stage:
                search.fused, stage = ranking.reciprocal_rank_fusion(stage, weights, rrf_k, search.fused), {}
            if not search.fused:
                continue
        if signal.applies(search):
            stage[signal.name] = search.hits[signal.name] = signal.search(search)
    if stage:
        search.fused = ranking.reciprocal_rank_fusion(stage, weights, rrf_k, search.fused)


def memory_search(*, org_id, query: str, filters: SearchFilters, limit: int = 10, mode: str = "hybrid",
                  expand: int = 0, threshold: float | None = None) -> SearchOutcome:
    """Rank memories for a query, as the tenant the caller has set (memories.retrieval).
    threshold (cosine similarity) keeps only vector matches at or above it (spec §3's store
    search); expand (a number of hops, 1 or 2; True is 1) adds the memories that many
    relationships from the best results (expansion). A hybrid search also ranks, as signals of
    their own: for a "why" question (memories.understanding.intent) the causal chain of its best results, up to
    two relationships along it (expansion along CAUSAL_CHAIN), the memories of the period its
    query names, by its words and by its meaning (timeframe), the memories written just before
    and after its best results (neighbours) and the other memories of their sessions (sessions);
    and when the query names people who speak in the namespaces searched, full text and meaning
    match the rest of the query and the words of anyone but the one it is about weigh less
    (speakers); when it asks for what goes by a name ("What books has Tim read?"), the memories
    that name nothing weigh less (naming). The outcome says what it understood of the query
    (SearchOutcome.understood)."""
    now = timezone.now()
    search = search_begun(org_id=org_id, query=query, filters=filters, limit=limit, mode=mode, expand=expand,
                          threshold=threshold, now=now)
    run_signals(search)
    reading, fused = search.reading, search.fused
    explained = ranking.explanations(search.hits)
    knobs = config().search
    if reading.asks_for is not None and fused:  # read only while NAMELESS_WEIGHT < 1 (read_query)
        fused, named = naming.prefer(org_id, fused, knobs.nameless_weight)
        for memory_id in named:
            explained.setdefault(memory_id, {})["names"] = {"asks_for": reading.asks_for}
    if reading.speaker is not None and fused:  # after every signal: the others' words still seed neighbours
        fused, spoken = speakers.prefer(org_id, reading.speaker, fused, knobs.speaker_others_weight)
        for memory_id in spoken:
            explained.setdefault(memory_id, {})["speaker"] = {"name": reading.speaker.name}
    # Rank every candidate on a few columns, most of which came with the signals' rows.
    rows = ranking.candidates_rows(org_id, search.hits, fused)
    results = ranking.rank(rows, fused, explained, now)[:limit]
    # Load whole records for the winners only.
    records.fill(org_id, results, usage=rows)
    understood = {"intent": reading.intent, "period": reading.period.as_json() if reading.period else None,
                  "speaker": reading.speaker.as_json() if reading.speaker else None,
                  "asks_for": reading.asks_for,
                  "signals": [name for name, hits in search.hits.items() if hits]}
    return SearchOutcome(results=results, degraded=search.degraded, vector_method=search.vector_method,
                         understood=understood, filled_from_fulltext=search.filled_from_fulltext)
