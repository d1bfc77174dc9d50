"""Ranking experiments of issue 34's second round, measured with replay.py
(benchmarks/recall/README.md, "Issue 34, round two: sessions and a turn's context"). Each is
a signal added to memories.retrieval.pipeline.SIGNALS for the run, the way a kept one would be
(a seeded signal fused as RRF_WEIGHTS[name]), so the figures are those the product would give.

- session: two-stage retrieval, as it was measured before it was built. The fusion's
  candidates vote for their session (their namespace and event_time, which run.py sets to the
  session's date), each with its fused score (vote sum, or max); the best `sessions` sessions'
  turns are ranked by cosine to the query. Vote max, 3 sessions, weight 0.3 was kept and is
  memories.retrieval.sessions (docs/adr/0054), which this experiment turns off while it runs.
- context: each candidate of the fusion, and the turn after each, ranked by its similarity to
  the query together with the turn before it: cosine of the query with the sum of the two
  embeddings (`mode=sum`), or the greater of the two cosines (`mode=max`).
- list-rocchio: Rocchio feedback (memories.retrieval.rocchio) also for questions asking for a
  plural class ("What books has Tim read?", "Which US cities does John mention ...?").
- session-cap: coverage for list questions. The ranked list is walked in order and a result
  whose session (namespace and event time) already has `cap` results above it waits until the
  end, so the first results come from more sessions: a list's members are said about one a
  session (README, "Where the misses are"). Gate `list`: questions asking for a plural class
  or a kind (list-rocchio's and Rocchio's "what kind of"); `all`: every question. The search
  asks for `depth` results to walk.
- members: the members of the class a list question asks for, found in the words of the
  memories searched. "What activities does Melanie partake in?" asks for "activities"; the
  words of the namespace's memories (four letters or more) nearest in meaning to the class word,
  by the model's embedding of each word alone (`members` of them, cosine at least `floor`), are
  its likely members (camping, swimming, pottery); the memories holding one of them (full text)
  are ranked by cosine to the query, a signal at `weight`. From the tenant's own words, no list.
- first-person: a question about the one person it names who speaks in the namespace is matched
  in that person's own voice. People say what they did in the first person ("I just signed up
  for a pottery class"); a question asks about them in the third ("What activities does
  Melanie partake in?"), and with the name taken out (speakers.unnamed) what is embedded is a
  question about nobody. Here the name becomes "I" (after its auxiliary: "does Melanie" -> "do
  I"), its possessive "my", for the query's embedding and full text alike (full text drops
  both as stop words). No setting.
- sentences: a turn says several things ("Wow, that's great! I just signed up for a pottery
  class yesterday. It's like therapy for me"), and its one embedding is their average, so the
  thing a question asks about is diluted by the rest. Each memory of the namespace searched is
  split into sentences, each embedded alone (once per process), and the memories are ranked by
  their best sentence's cosine to the query (the whole text counted as one of them): a signal
  fused with full text and the vector signal at `weight`, the vector signal at `vector`; `gate`
  "all" for every question, "said" for those Rocchio's gate does not take (an inference or a
  kind of something: what the memories mean together, not one thing said).
- says-when: a "when" question (memories.understanding.intent) is answered by a memory that says
  when: of the evidence turns in the top 20 of LoCoMo's "when" questions 84% hold a time word
  (yesterday, last week, a month's name...), of the other turns there 27%. After fusion, the
  memories whose content holds none weigh `weight`; `words` "broad" (TIME_WORDS) or "period"
  (memories.understanding.when reads a period from the content).
- statement: the question matched as a statement. An answer states ("I just signed up for a
  pottery class"), a question's form matches other questions ("What have you been up to?"); the
  leading wh-word, its "kind of" and the auxiliary after it leave what full text and the
  query's embedding match ("What activities has Melanie done?" -> "activities has done"), for
  every question. No setting. (Round eight.)
- wordnet: `members` with the membership test the model cannot answer taken from WordNet's
  noun hierarchy (round ten). The class word ("martial arts" -> martial_art, "cities" -> city;
  its senses: `senses` "all", "attested" (those SemCor saw the word in) or "first") and every
  word whose most frequent noun sense lies under one of those senses, as a hyponym or an
  instance ("Chicago", "taekwondo"; "reading" is a process before it is a town, so it is not a
  city); the namespace's words among them (a capitalised word for a name), at most `most`, find
  the memories that hold one, ranked by cosine to the query at `weight`. Needs nltk and
  WordNet 3.0's files where nltk looks for them (`wordnet` under an nltk_data folder), neither
  of which the product depends on.
- names: a list question ("What books has Tim read?", "What kind of art ...?") asks for
  instances, and instances are mostly named: of the evidence turns in such questions' top 20,
  40% name something other than the conversation's two people, of the other turns 12%. After
  fusion, the memories that name nothing (no extractor link to an entity other than a date, a
  quantity or a speaker) weigh `weight`; `gate` "list" (asks_plural_class or "kind of"), "named"
  (a class whose members go by a name: the product's place and organisation words, titled
  works) or "all". Gate "named" at 0.7 was kept and is memories.retrieval.naming (docs/adr/0067),
  which this experiment turns off while it runs.
- own-turns: each of the neighbours signal's seeds brings its speaker's own previous and next
  turn in the namespace (the stored speaker link; `session` 1: within the seed's session, its
  event time), ranked just below the seed, at `weight`; `gate` "all" or "when" (questions
  memories.understanding.intent reads as asking when). In a conversation of two that is two
  turns away, past the other's reply: a speaker announces news with its time ("Guess what? I
  had a great accomplishment this Tuesday!") and tells it after the other asks ("I won the
  regional chess tournament"). (Round ten.)
- replies: a turn that asks something is answered by the turn after it. "Why did Caroline choose
  the adoption agency?" matches the other's question ("What made you pick it?") better than the
  answer ("I chose them 'cause they help LGBTQ+ folks"), and the neighbours signal leaves a
  seed's neighbour alone when it is a seed too. Each of the fusion's best `seeds` memories whose
  text holds a "?" brings the memory written after it in its namespace, ranked just below it,
  a seed itself or not (`seeded` 0: only those that are not), at `weight`; `voice` 1: when
  the question is about one person who speaks there, only replies in that person's words.
  (Round thirteen.)
- centred: the query's embedding less `alpha` times the mean embedding of the memories
  searched, normalised, for every signal that reads it (`scope` "all") or the vector signal
  alone ("vector"): ranks by cos(q, d) - alpha cos(mean, d), so a memory like every other of
  the namespace ("Thanks, Mel! Family is everything") weighs less. (Round fourteen.)
- context-words: full text where a memory holds its own words and `before` times the words of
  the memory written before it in its namespace (the question a reply answers: "Been playing
  it for a month now" after "How long have you been playing this game?"), BM25 computed here
  over the namespace searched (`stats` "namespace": its IDF, row count and average length) or
  the organisation ("tenant", as the built full text does); `replace` 1 runs it in place of
  the built full-text signal, 0 beside it at `weight`; `when` 0 leaves the words before out
  for questions asking when (memories.understanding.intent), whose answer says the time in
  its own words. (Round fourteen.)
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections import defaultdict

from django.db import connection

from memories.models import live_sql
from memories.retrieval import fulltext, neighbours, pipeline, ranking, rocchio, speakers
from memories.retrieval.ranking import Hit, ranked_hits
from memories.vectors.embeddings import vector_literal
from memory_platform.config import config

SETTINGS = {"session": {"weight": 1.0, "sessions": 3, "vote": "sum"},
            "context": {"weight": 1.0, "mode": "sum"},
            "list-rocchio": {},
            "session-cap": {"cap": 2, "gate": "list", "depth": 60},
            "members": {"weight": 0.5, "members": 12, "floor": 0.35},
            "wordnet": {"weight": 0.5, "most": 60, "senses": "all"},
            "first-person": {},
            "sentences": {"weight": 1.0, "vector": 1.0, "gate": "all"},
            "says-when": {"weight": 0.5, "words": "broad"},
            "statement": {},
            "own-turns": {"weight": 1.0, "session": 1, "gate": "all"},
            "names": {"weight": 0.7, "gate": "list"},
            "replies": {"weight": 1.0, "seeds": 10, "seeded": 1, "voice": 0},
            "centred": {"alpha": 1.0, "scope": "all"},
            "context-words": {"weight": 1.0, "before": 0.5, "replace": 0, "stats": "namespace", "when": 1, "asks": 0}}
EXPERIMENTS = set(SETTINGS)
chosen: dict = {}


# --------------------------------------------------------------------------- session

SESSION_OF_SQL = """
    SELECT m.id, m.scope, m.event_time
    FROM unnest(%s::uuid[]) AS wanted(id)
    JOIN memories m ON m.org_id = %s AND m.id = wanted.id
    WHERE m.event_time IS NOT NULL
"""
SESSION_TURNS_SQL = """
    SELECT m.id, 1 - (m.embedding <=> %s::vector) AS similarity, {columns}
    FROM memories m {usage}
    WHERE {where} AND m.embedding IS NOT NULL
      AND (m.scope, m.event_time) IN (SELECT * FROM unnest(%s::text[], %s::timestamptz[]))
    ORDER BY similarity DESC, m.id
    LIMIT %s
"""


def best_sessions(fused: dict, session_of: dict, n: int, vote: str) -> list[tuple]:
    """The n sessions whose candidates' fused scores add up (vote "sum") or reach (vote "max")
    the most."""
    votes = defaultdict(list)
    for memory_id, score in fused.items():
        if memory_id in session_of:
            votes[session_of[memory_id]].append(score)
    combine = sum if vote == "sum" else max
    return sorted(votes, key=lambda session: (-combine(votes[session]), str(session)))[:n]


def session_turns(search: pipeline.Search) -> list[Hit]:
    with connection.cursor() as cursor:
        cursor.execute(SESSION_OF_SQL, [[str(memory_id) for memory_id in search.fused], search.org_id])
        session_of = {memory_id: (scope, when) for memory_id, scope, when in cursor.fetchall()}
        sessions = best_sessions(search.fused, session_of, int(chosen["sessions"]), chosen["vote"])
        if not sessions:
            return []
        where, params = search.filters.where(search.org_id)
        cursor.execute(SESSION_TURNS_SQL.format(columns=ranking.ranking_columns("m"), usage=ranking.usage_join("m"),
                                                where=where),
                       [vector_literal(search.embed()), search.org_id, *params, [scope for scope, _ in sessions],
                        [when for _, when in sessions], search.k])
        return ranked_hits(cursor.fetchall(), "similarity")


# --------------------------------------------------------------------------- context

CONTEXT_SQL = """
    WITH candidate AS (
        SELECT wanted.id FROM unnest(%s::uuid[]) AS wanted(id)
        UNION
        SELECT after.id FROM unnest(%s::uuid[]) AS wanted(id)
        JOIN memories seed ON seed.org_id = %s AND seed.id = wanted.id
        CROSS JOIN LATERAL (
            SELECT m.id FROM memories m
            WHERE m.org_id = %s AND m.scope = seed.scope AND {live}
              AND (m.created_at, m.id) > (seed.created_at, seed.id)
            ORDER BY m.created_at, m.id LIMIT 1) after
    )
    SELECT m.id, {similarity} AS similarity, {columns}
    FROM candidate JOIN memories m ON m.org_id = %s AND m.id = candidate.id
    CROSS JOIN LATERAL (
        SELECT p.embedding FROM memories p
        WHERE p.org_id = %s AND p.scope = m.scope AND {live_before}
          AND (p.created_at, p.id) < (m.created_at, m.id)
        ORDER BY p.created_at DESC, p.id DESC LIMIT 1) before
    {usage}
    WHERE {where} AND m.embedding IS NOT NULL AND before.embedding IS NOT NULL
    ORDER BY similarity DESC, m.id
    LIMIT %s
"""
SIMILARITY = {"sum": ("1 - ((m.embedding + before.embedding) <=> %s::vector)", 1),
              "max": ("greatest(1 - (m.embedding <=> %s::vector), 1 - (before.embedding <=> %s::vector))", 2)}


def with_turn_before(search: pipeline.Search) -> list[Hit]:
    candidates = [str(memory_id) for memory_id in search.fused]
    similarity, times = SIMILARITY[chosen["mode"]]
    where, params = search.filters.where(search.org_id)
    sql = CONTEXT_SQL.format(live=live_sql("m"), live_before=live_sql("p"), similarity=similarity,
                             columns=ranking.ranking_columns("m"), usage=ranking.usage_join("m"), where=where)
    with connection.cursor() as cursor:
        cursor.execute(sql, [candidates, candidates, search.org_id, search.org_id,
                             *[vector_literal(search.embed())] * times, search.org_id, search.org_id, search.org_id,
                             *params, search.k])
        return ranked_hits(cursor.fetchall(), "similarity")


# --------------------------------------------------------------------------- list-rocchio

AUXILIARY = r"(?:has|have|does|do|did|is|are|was|were)"
# "what/which", up to two words, a plural noun, then an auxiliary: a question asking for the
# members of a plural class.
PLURAL_CLASS = re.compile(rf"\b(?:what|which)\s+(?!{AUXILIARY}\b)(?:[\w-]+\s+){{0,2}}?([a-z]+s)\s+{AUXILIARY}\b",
                          re.I)


def asks_plural_class(query: str) -> bool:
    match = PLURAL_CLASS.search(query)
    return match is not None and not match.group(1).lower().endswith("ss")


# --------------------------------------------------------------------------- session-cap

KIND_OF = re.compile(r"\b(?:what|which)\s+(?:kinds?|types?|sorts?)\s+of\b", re.I)


def capped_by_session(results: list, cap: int) -> list:
    """The results in order, those past `cap` of their session moved after the rest."""
    seen, first, later = defaultdict(int), [], []
    for result in results:
        memory = result.memory
        session = (memory.namespace, memory.event_time) if memory.event_time else ("", memory.pk)
        seen[session] += 1
        (first if seen[session] <= cap else later).append(result)
    return first + later


def install_session_cap() -> str:
    searched = pipeline.memory_search

    def memory_search(*, query: str, limit: int = 10, **arguments):
        gated = chosen["gate"] == "all" or asks_plural_class(query) or KIND_OF.search(query) is not None
        if not gated:
            return searched(query=query, limit=limit, **arguments)
        outcome = searched(query=query, limit=max(limit, chosen["depth"]), **arguments)
        outcome.results[:] = capped_by_session(outcome.results, chosen["cap"])[:limit]
        return outcome

    pipeline.memory_search = memory_search
    return f"session-cap {chosen}"


# --------------------------------------------------------------------------- members

WORDS_SQL = """
    SELECT DISTINCT lower(word) FROM memories m, regexp_split_to_table(m.content, '[^A-Za-z]+') AS word
    WHERE {where} AND length(word) >= 4
"""
MEMBERS_SQL = """
    SELECT m.id, 1 - (m.embedding <=> %s::vector) AS similarity, {columns}
    FROM memories m {usage}
    WHERE {where} AND m.embedding IS NOT NULL AND to_tsvector('english', m.content) @@ to_tsquery('english', %s)
    ORDER BY similarity DESC, m.id
    LIMIT %s
"""
word_vectors: dict = {}


def class_word(query: str) -> str | None:
    match = PLURAL_CLASS.search(query)
    if match is not None and not match.group(1).lower().endswith("ss"):
        return match.group(1).lower()
    kind = re.search(r"\b(?:kinds?|types?|sorts?)\s+of\s+([a-z]+)", query, re.I)
    return kind.group(1).lower() if kind else None


def memories_holding(search: pipeline.Search, words: list[str]) -> list[Hit]:
    """The memories searched that hold one of `words` (full text), ranked by cosine to the query."""
    where, params = search.filters.where(search.org_id)
    with connection.cursor() as cursor:
        cursor.execute(MEMBERS_SQL.format(columns=ranking.ranking_columns("m"), usage=ranking.usage_join("m"),
                                          where=where),
                       [vector_literal(search.embed()), search.org_id, *params, " | ".join(words), search.k])
        return ranked_hits(cursor.fetchall(), "similarity")


def members_of(search: pipeline.Search) -> list[Hit]:
    import numpy

    from memories.vectors.embeddings import get_embedder

    word = class_word(search.reading.query)
    if word is None:
        return []
    where, params = search.filters.where(search.org_id)
    with connection.cursor() as cursor:
        cursor.execute(WORDS_SQL.format(where=where), params)
        vocabulary = [row[0] for row in cursor.fetchall()]
    embedder = get_embedder()
    missing = [w for w in vocabulary + [word] if w not in word_vectors]
    for w, vector in zip(missing, embedder.embed(missing)):
        word_vectors[w] = numpy.asarray(vector)
    stem = word.rstrip("s")[:5]
    scored = sorted(((float(word_vectors[w] @ word_vectors[word]), w) for w in vocabulary if not w.startswith(stem)),
                    reverse=True)
    members = [w for cosine, w in scored[:int(chosen["members"])] if cosine >= chosen["floor"]]
    chosen.setdefault("seen", []).append((word, members[:6]))
    if not members:
        return []
    return memories_holding(search, members)


# --------------------------------------------------------------------------- wordnet

CASED_WORDS_SQL = """
    SELECT DISTINCT CASE WHEN word ~ '^[A-Z][a-z]' THEN word ELSE lower(word) END
    FROM memories m, regexp_split_to_table(m.content, '[^A-Za-z]+') AS word
    WHERE {where} AND length(word) >= 3
"""


def wordnet_class(query: str):
    """The question's class word as WordNet noun synsets ("martial arts" -> martial_art), or []."""
    from nltk.corpus import wordnet as wn

    match = PLURAL_CLASS.search(query)
    words = None
    if match is not None and not match.group(1).lower().endswith("ss"):
        before = query[:match.start(1)].split()
        words = [before[-1].lower()] if before and before[-1].lower() not in ("what", "which") else []
        words.append(match.group(1).lower())
    else:
        kind = re.search(r"\b(?:kinds?|types?|sorts?)\s+of\s+([a-z]+)(?:\s+([a-z]+))?", query, re.I)
        if kind:
            words = [w.lower() for w in kind.groups() if w]
    if not words:
        return []
    nouns = [wn.morphy(word, wn.NOUN) or word for word in words]
    for lemma in ["_".join(nouns[-2:]), nouns[-1] if match else nouns[0]]:
        if senses := wn.synsets(lemma, wn.NOUN):
            if chosen["senses"] == "attested":  # the senses SemCor saw the word in, else the first
                seen = [sense for sense in senses
                        if any(l.count() > 0 for l in sense.lemmas() if l.name().lower() == lemma.lower())]
                return seen or senses[:1]
            return senses[:1] if chosen["senses"] == "first" else senses
    return []


def wordnet_members(synsets) -> set[str]:
    """The words whose most frequent noun sense lies under one of `synsets` (hyponyms and
    instances, transitively): "reading" is a process before it is a town, "ball" an object
    before it is a game. Instances (proper names) keep their capital letter."""
    from nltk.corpus import wordnet as wn

    under = set()
    for synset in synsets:
        under.update(synset.closure(lambda s: s.hyponyms() + s.instance_hyponyms()))
    members = set()
    for synset in under:
        for lemma in synset.lemmas():
            name = lemma.name()
            if "_" in name or not name.isalpha():
                continue
            senses = wn.synsets(name, wn.NOUN)
            if senses and senses[0] in under:
                members.add(name if name[0].isupper() else name.lower())
    return members


def wordnet_members_of(search: pipeline.Search) -> list[Hit]:
    synsets = wordnet_class(search.reading.query)
    if not synsets:
        return []
    members = wordnet_members(synsets)
    where, params = search.filters.where(search.org_id)
    with connection.cursor() as cursor:
        cursor.execute(CASED_WORDS_SQL.format(where=where), params)
        vocabulary = {row[0] for row in cursor.fetchall()}
    found = sorted(members & vocabulary)
    chosen.setdefault("seen", []).append((search.reading.query, found))
    if not found or len(found) > chosen["most"]:
        return []
    return memories_holding(search, found)


# --------------------------------------------------------------------------- own-turns

OWN_TURNS_SQL = """
    SELECT seed.id, near.id, near.side
    FROM unnest(%s::uuid[]) WITH ORDINALITY AS wanted(id, position)
    JOIN memories seed ON seed.org_id = %s AND seed.id = wanted.id
    JOIN memory_entities said ON said.org_id = seed.org_id AND said.memory_id = seed.id AND said.role = 'speaker'
    CROSS JOIN LATERAL (
        (SELECT m.id, 'previous' AS side FROM memories m
         JOIN memory_entities me ON me.org_id = m.org_id AND me.memory_id = m.id AND me.role = 'speaker'
                                AND me.entity_id = said.entity_id
         WHERE m.org_id = seed.org_id AND m.scope = seed.scope AND {live} {session}
           AND (m.created_at, m.id) < (seed.created_at, seed.id)
         ORDER BY m.created_at DESC, m.id DESC LIMIT 1)
        UNION ALL
        (SELECT m.id, 'next' FROM memories m
         JOIN memory_entities me ON me.org_id = m.org_id AND me.memory_id = m.id AND me.role = 'speaker'
                                AND me.entity_id = said.entity_id
         WHERE m.org_id = seed.org_id AND m.scope = seed.scope AND {live} {session}
           AND (m.created_at, m.id) > (seed.created_at, seed.id)
         ORDER BY m.created_at, m.id LIMIT 1)
    ) near
    JOIN memories m ON m.org_id = %s AND m.id = near.id
    WHERE {where}
    ORDER BY wanted.position, near.side DESC
"""


def own_turns(search: pipeline.Search) -> list[Hit]:
    """Each seed's speaker's own previous and next turn in its namespace (in a conversation of
    two, two turns away: past the other's reply), ranked just below the seed, as neighbours."""
    if chosen["gate"] == "when" and search.reading.intent != "when":
        return []
    seeds = ranking.best(search.fused, config().search.neighbour_seeds)
    if not seeds:
        return []
    where, params = search.filters.where(search.org_id)
    session = "AND m.event_time IS NOT DISTINCT FROM seed.event_time" if chosen["session"] else ""
    with connection.cursor() as cursor:
        cursor.execute(OWN_TURNS_SQL.format(live=live_sql("m"), session=session, where=where),
                       [[str(seed) for seed in seeds], search.org_id, search.org_id, *params])
        return neighbours.below_seeds(seeds, cursor.fetchall())


# --------------------------------------------------------------------------- replies

REPLIES_SQL = """
    SELECT seed.id, near.id, 'next'
    FROM unnest(%s::uuid[]) WITH ORDINALITY AS wanted(id, position)
    JOIN memories seed ON seed.org_id = %s AND seed.id = wanted.id AND strpos(seed.content, '?') > 0
    CROSS JOIN LATERAL (
        SELECT m.id FROM memories m
        WHERE m.org_id = %s AND m.scope = seed.scope AND {live}
          AND (m.created_at, m.id) > (seed.created_at, seed.id)
        ORDER BY m.created_at, m.id LIMIT 1
    ) near
    JOIN memories m ON m.org_id = %s AND m.id = near.id
    WHERE {where}
    ORDER BY wanted.position
"""


def replies(search: pipeline.Search) -> list[Hit]:
    """The memory written after each seed that asks something (its text holds a "?"): the reply,
    ranked just below the seed, a seed itself or not (`seeded` 0: only those that are not)."""
    seeds = ranking.best(search.fused, chosen["seeds"])
    if not seeds:
        return []
    where, params = search.filters.where(search.org_id)
    with connection.cursor() as cursor:
        cursor.execute(REPLIES_SQL.format(live=live_sql("m"), where=where),
                       [[str(seed) for seed in seeds], search.org_id, search.org_id, search.org_id, *params])
        rows = cursor.fetchall()
    if chosen["voice"] and search.reading.speaker is not None and rows:
        cursor_rows = {memory_id: score for _, memory_id, _ in rows for score in [1.0]}
        _, spoken = speakers.prefer(search.org_id, search.reading.speaker, cursor_rows, 1.0)
        rows = [row for row in rows if row[1] in spoken]
    hits, seen = [], set() if chosen["seeded"] else set(seeds)
    for seed, memory_id, side in rows:
        if memory_id not in seen:
            seen.add(memory_id)
            hits.append(Hit(memory_id, 0.0, seeds.index(seed) + 2, details={"from": str(seed), "side": side}))
    return hits


# --------------------------------------------------------------------------- first-person

kept_unnamed = speakers.unnamed
FIRST_PERSON_AUXILIARY = {"does": "do", "has": "have", "is": "am", "was": "was", "did": "did", "can": "can",
                          "will": "will", "would": "would", "could": "could", "might": "might", "should": "should"}


def as_cased(word: str, like: str) -> str:
    return word.capitalize() if like[:1].isupper() else word


def in_first_person(query: str, names: tuple[str, ...]) -> str:
    """The query with the first person it names as "I": "does Melanie" -> "do I", "Melanie's" ->
    "my", the name elsewhere -> "I"; the others it names taken out, as speakers.unnamed does."""
    query = kept_unnamed(query, names[1:]) if names[1:] else query
    name = re.escape(names[0])
    auxiliary = "|".join(FIRST_PERSON_AUXILIARY)
    text = re.sub(rf"\b({auxiliary})\s+{name}\b(?!['’])",
                  lambda match: as_cased(FIRST_PERSON_AUXILIARY[match.group(1).lower()], match.group(1)) + " I",
                  query, flags=re.I)
    text = re.sub(rf"\b{name}['’]s?\b", "my", text)
    return re.sub(rf"\b{name}\b", "I", text)


# --------------------------------------------------------------------------- sentences

NAMESPACE_TEXTS_SQL = "SELECT m.id, m.content FROM memories m WHERE {where} AND m.embedding IS NOT NULL"
SENTENCE_ROWS_SQL = """
    SELECT m.id, s.similarity, {columns}
    FROM unnest(%s::uuid[], %s::float8[]) AS s(id, similarity)
    JOIN memories m ON m.org_id = %s AND m.id = s.id {usage}
    ORDER BY s.similarity DESC, m.id
"""
SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
sentence_vectors: dict = {}  # namespace -> (memory ids, a matrix of sentence vectors, each row's memory)


def sentences_of(text: str) -> list[str]:
    return [text] + [part for part in SENTENCE_END.split(text) if len(part.split()) >= 3 and part != text]


def namespace_sentences(search: pipeline.Search):
    import numpy

    from memories.vectors.embeddings import get_embedder

    namespace = search.filters.namespace
    if namespace not in sentence_vectors:
        where, params = search.filters.where(search.org_id)
        with connection.cursor() as cursor:
            cursor.execute(NAMESPACE_TEXTS_SQL.format(where=where), params)
            rows = cursor.fetchall()
        texts, owners = [], []
        for position, (_, content) in enumerate(rows):
            for sentence in sentences_of(content):
                texts.append(sentence)
                owners.append(position)
        vectors = numpy.asarray(get_embedder().embed(texts), dtype=numpy.float32)
        sentence_vectors[namespace] = ([memory_id for memory_id, _ in rows], vectors, numpy.asarray(owners))
    return sentence_vectors[namespace]


def by_best_sentence(search: pipeline.Search) -> list[Hit]:
    import numpy

    ids, vectors, owners = namespace_sentences(search)
    cosines = vectors @ numpy.asarray(search.embed(), dtype=numpy.float32)
    best = numpy.full(len(ids), -1.0)
    numpy.maximum.at(best, owners, cosines)
    top = numpy.argsort(-best)[: search.k]
    with connection.cursor() as cursor:
        cursor.execute(SENTENCE_ROWS_SQL.format(columns=ranking.ranking_columns("m"), usage=ranking.usage_join("m")),
                       [[str(ids[i]) for i in top], [float(best[i]) for i in top], search.org_id, search.org_id])
        return ranked_hits(cursor.fetchall(), "similarity")


# --------------------------------------------------------------------------- says-when

TIME_WORDS = re.compile(
    r"\b(yesterday|today|tonight|tomorrow|ago|recently|lately|since"
    r"|(last|this|next|past) (week|weekend|month|year|night|morning|summer|winter|spring|fall"
    r"|monday|tuesday|wednesday|thursday|friday|saturday|sunday)"
    r"|on (monday|tuesday|wednesday|thursday|friday|saturday|sunday)"
    r"|january|february|march|april|june|july|august|september|october|november|december|(19|20)\d\d)\b",
    re.IGNORECASE)


def says_when(text: str) -> bool:
    if chosen["words"] == "period":
        from datetime import datetime, timezone

        from memories.understanding import when
        return when.period(text, datetime.now(timezone.utc)) is not None
    return TIME_WORDS.search(text) is not None


def install_says_when() -> str:
    """A "when" question's fused memories that say no time weigh chosen["weight"]."""
    kept = pipeline.run_signals

    def run_signals(search, signals=pipeline.SIGNALS):
        kept(search, signals)
        if search.wide and search.reading.intent == "when" and search.fused:
            with connection.cursor() as cursor:
                cursor.execute("SELECT id, content FROM memories WHERE org_id = %s AND id = ANY(%s::uuid[])",
                               [search.org_id, [str(memory_id) for memory_id in search.fused]])
                timed = {memory_id for memory_id, content in cursor.fetchall() if says_when(content)}
            search.fused = {memory_id: score if memory_id in timed else score * chosen["weight"]
                            for memory_id, score in search.fused.items()}

    pipeline.run_signals = run_signals
    return f"says-when {chosen}"


# --------------------------------------------------------------------------- statement

QUESTION_FORM = re.compile(r"^\s*(?:what|which|who|whom|whose|where|when|how|why)\b"
                           r"(?:\s+(?:kind|kinds|type|types|sort|sorts)\s+of)?"
                           r"(?:\s+(?:is|are|was|were|do|does|did|has|have|had|can|could|would|will|might|should))?\s+",
                           re.IGNORECASE)


def install_statement() -> str:
    read = pipeline.QueryReading.of.__func__

    def of(cls, query: str, **arguments):
        reading = read(cls, query, **arguments)
        stated = QUESTION_FORM.sub("", reading.words).rstrip("? ")
        if not re.search(r"\w", stated):
            return reading
        return dataclasses.replace(reading, words=stated, terms=tuple(fulltext.query_words(stated)))

    pipeline.QueryReading.of = classmethod(of)
    return "statement"


# --------------------------------------------------------------------------- names

# The memories among `ids` that name something other than a person who speaks in their
# namespace: a link of role "mentioned" to an entity that is not a date or a quantity and
# not a speaker (a reply addresses the other by name: "Thanks, Caroline!").
NAMING_SQL = """
    SELECT DISTINCT l.memory_id FROM memory_entities l JOIN entities e ON e.id = l.entity_id
    WHERE l.org_id = %s AND l.memory_id = ANY(%s::uuid[]) AND l.role = 'mentioned'
      AND e.kind NOT IN ('date', 'quantity')
      AND NOT EXISTS (SELECT 1 FROM memory_entities s WHERE s.org_id = l.org_id AND s.entity_id = e.id
                      AND s.role = 'speaker')
"""


# Classes whose members are mostly called by a name: the product's own place and organisation
# words (memories.understanding.entities) and the titled works of English.
WORKS = {"book", "novel", "movie", "film", "show", "series", "song", "album", "game", "band", "team", "brand",
         "author", "artist", "composer", "writer", "restaurant", "place", "location", "destination"}
ANY_CLASS = re.compile(rf"\b(?:what|which)\s+(?!{AUXILIARY}\b)(?:[\w-]+\s+){{0,2}}?([a-z]+)\s+{AUXILIARY}\b", re.I)


def names_a_named_class(query: str) -> bool:
    from memories.understanding.entities import ORGANIZATION_WORDS, PLACE_WORDS
    match = class_word(query) or (ANY_CLASS.search(query) and ANY_CLASS.search(query).group(1).lower())
    if not match:
        return False
    singular = re.sub(r"(ies)$", "y", match) if match.endswith("ies") else re.sub(r"(?<!s)s$", "", match)
    singular = re.sub(r"(ches|shes|sses|xes)$", lambda m: m.group(1)[:-2], singular) if singular == match else singular
    return singular in PLACE_WORDS | ORGANIZATION_WORDS | WORKS


# gate "where-who": a "where" question is answered by a place named, a "who" by a person.
ANSWER_KINDS = {"where": "('place', 'organization')", "who": "('person')"}


def install_names() -> str:
    """A list question's fused memories that name nothing weigh chosen["weight"]; the built
    preference (memories.retrieval.naming, gate "named" at 0.7) is off while it runs."""
    if chosen["gate"] != "where-who":  # on beside it: where and who questions ask for no class
        object.__setattr__(config().search, "nameless_weight", 1.0)
    kept = pipeline.run_signals

    def run_signals(search, signals=pipeline.SIGNALS):
        kept(search, signals)
        query = search.reading.query
        intent = search.reading.intent
        gated = {"all": True, "named": names_a_named_class(query), "where-who": intent in ANSWER_KINDS,
                 "list": asks_plural_class(query) or KIND_OF.search(query) is not None}[chosen["gate"]]
        if search.wide and gated and search.fused:
            sql = NAMING_SQL
            if chosen["gate"] == "where-who":
                sql = NAMING_SQL.replace("e.kind NOT IN ('date', 'quantity')", f"e.kind IN {ANSWER_KINDS[intent]}")
            with connection.cursor() as cursor:
                cursor.execute(sql, [search.org_id, [str(memory_id) for memory_id in search.fused]])
                naming = {row[0] for row in cursor.fetchall()}
            search.fused = {memory_id: score if memory_id in naming else score * chosen["weight"]
                            for memory_id, score in search.fused.items()}

    pipeline.run_signals = run_signals
    return f"names {chosen}"


# --------------------------------------------------------------------------- centred

MEAN_SQL = "SELECT avg(m.embedding)::text FROM memories m WHERE {where} AND m.embedding IS NOT NULL"


def install_centred() -> str:
    """The query's embedding less `alpha` times the mean of the memories searched, normalised:
    ranks by cos(q, d) - alpha cos(mean, d), up to the query's own scale."""
    import numpy

    means: dict = {}
    embedded = pipeline.Search.embed

    def embed(search):
        vector_ = embedded(search)
        if vector_ is None or search.embedding_centred:
            return vector_
        key = (search.org_id, repr(search.filters))
        if key not in means:
            where, params = search.filters.where(search.org_id)
            with connection.cursor() as cursor:
                cursor.execute(MEAN_SQL.format(where=where), params)
                means[key] = numpy.array(json.loads(cursor.fetchone()[0]))
        moved = numpy.array(vector_) - chosen["alpha"] * means[key]
        search.embedding = (moved / numpy.linalg.norm(moved)).tolist()
        search.embedding_centred = True
        return search.embedding

    pipeline.Search.embedding_centred = False
    if chosen["scope"] == "all":
        pipeline.Search.embed = embed
    else:  # the vector signal's own statement only
        meaning = pipeline.meaning

        def centred_meaning(search):
            kept, centred = search.embedding, search.embedding_centred
            embed(search)
            try:
                return meaning(search)
            finally:
                search.embedding, search.embedding_centred = kept, centred

        pipeline.SIGNALS = tuple(dataclasses.replace(signal, search=centred_meaning) if signal.name == "vector"
                                 else signal for signal in pipeline.SIGNALS)
        pipeline.run_signals.__defaults__ = (pipeline.SIGNALS,)
    return f"centred {chosen}"


# --------------------------------------------------------------------------- context-words

NAMESPACE_LEXEMES_SQL = """
    SELECT m.id, m.search_vector::text, m.scope, strpos(m.content, '?') > 0 FROM memories m WHERE {where}
    ORDER BY m.scope, m.created_at, m.id
"""
LEXEME = re.compile(r"'((?:[^']|'')+)'(?::([\d,A-D]+))?")


def namespace_documents(search: pipeline.Search) -> list[tuple]:
    """Each memory of the namespace searched (stats "tenant": of the organisation), in written
    order, with its lexemes' counts and its namespace."""
    from memories.retrieval.filters import SearchFilters

    filters = search.filters if chosen["stats"] == "namespace" else SearchFilters()
    key = (search.org_id, repr(filters))
    if key not in namespace_documents.cache:
        where, params = filters.where(search.org_id)
        with connection.cursor() as cursor:
            cursor.execute(NAMESPACE_LEXEMES_SQL.format(where=where), params)
            namespace_documents.cache[key] = [
                (memory_id, {lexeme.replace("''", "'"): len(positions.split(",")) if positions else 1
                             for lexeme, positions in LEXEME.findall(vector_ or "")}, scope, asks)
                for memory_id, vector_, scope, asks in cursor.fetchall()]
    return namespace_documents.cache[key]


namespace_documents.cache = {}


def with_words_before(search: pipeline.Search) -> list[Hit]:
    """BM25 of the query's lexemes over each memory's words plus `before` times the words of
    the memory written before it (the question a reply answers)."""
    import math

    documents = namespace_documents(search)
    lexemes = list(fulltext.query_terms(list(search.reading.terms)))
    if not lexemes or not documents:
        return []
    counts, searched = [], set()
    for position, (memory_id, own, scope, _) in enumerate(documents):
        merged = dict(own)
        if scope == search.filters.namespace:
            searched.add(memory_id)
        expanded = chosen["when"] or search.reading.intent != "when"
        if (expanded and position and documents[position - 1][2] == scope
                and (documents[position - 1][3] or not chosen["asks"])):
            for lexeme, count in documents[position - 1][1].items():
                merged[lexeme] = merged.get(lexeme, 0) + chosen["before"] * count
        counts.append((memory_id, merged))
    lengths = [sum(c.values()) for _, c in counts]
    average = sum(lengths) / len(lengths)
    frequency = {lexeme: sum(1 for _, c in counts if lexeme in c) for lexeme in lexemes}
    scored = []
    for (memory_id, c), length in zip(counts, lengths):
        score = 0.0
        for lexeme in lexemes:
            tf = c.get(lexeme, 0)
            if tf:
                idf = math.log(1 + (len(counts) - frequency[lexeme] + 0.5) / (frequency[lexeme] + 0.5))
                score += idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * length / average))
        if score > 0 and memory_id in searched:
            scored.append((memory_id, score))
    scored.sort(key=lambda pair: (-pair[1], str(pair[0])))
    return ranked_hits(scored[:search.k])


# --------------------------------------------------------------------------- installing one


def signal_position(name: str) -> int:
    return [row.name for row in pipeline.SIGNALS].index(name)


def add_signal(signal: pipeline.Signal, *, at: int, weights: dict) -> None:
    """Run `signal` at position `at` of pipeline.SIGNALS, fused at chosen["weight"], with
    `weights` for other signals, for this process."""
    signals = list(pipeline.SIGNALS)
    signals.insert(at, signal)
    pipeline.run_signals.__defaults__ = (tuple(signals),)
    knobs = config().search
    object.__setattr__(knobs, "rrf_weights", {**knobs.rrf_weights, signal.name: chosen["weight"], **weights})


def install(name: str, settings: dict) -> str:
    """Add the experiment's signal for this process (before Rocchio, so neighbours and Rocchio
    start from a fusion that holds it); returns what runs, for the printout."""
    chosen.update(SETTINGS[name], **{key: type(SETTINGS[name][key])(value) for key, value in settings.items()})
    if name == "session-cap":
        return install_session_cap()
    if name == "first-person":
        speakers.unnamed = in_first_person
        return "first-person"
    if name == "list-rocchio":
        kept = rocchio.applies
        rocchio.applies = lambda query: kept(query) or asks_plural_class(query)
        return "list-rocchio"
    if name == "says-when":
        return install_says_when()
    if name == "statement":
        return install_statement()
    if name == "names":
        return install_names()
    if name == "centred":
        return install_centred()
    if name == "context-words":  # beside full text, fused with it (or in its place)
        add_signal(pipeline.Signal("context-words-experiment", seeded=False, search=with_words_before,
                                   applies=lambda s: chosen["weight"] > 0 and s.wide),
                   at=signal_position("vector") + 1, weights={"fulltext": 0.0} if chosen["replace"] else {})
        return f"context-words {chosen}"
    if name == "sentences":  # beside the vector signal, fused with it
        add_signal(pipeline.Signal("sentences-experiment", seeded=False, search=by_best_sentence,
                                   applies=lambda s: chosen["weight"] > 0 and s.embed() is not None
                                   and (chosen["gate"] == "all" or not rocchio.applies(s.reading.query))),
                   at=signal_position("vector") + 1, weights={"vector": chosen["vector"]})
        return f"sentences {chosen}"
    search = {"session": session_turns, "context": with_turn_before, "members": members_of,
              "wordnet": wordnet_members_of, "own-turns": own_turns, "replies": replies}[name]
    name = f"{name}-experiment"  # beside the built signals' names; the built session signal is off
    built_session = 0.0 if name == "session-experiment" else config().search.rrf_weights["session"]
    add_signal(pipeline.Signal(name, seeded=True, search=search,
                               applies=lambda s: s.wide and chosen["weight"] > 0 and s.embed() is not None),
               at=signal_position("rocchio"), weights={"session": built_session})
    return f"{name} {chosen}"

