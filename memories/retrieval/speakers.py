"""Who a question is about: when a query names a person who speaks in the searched namespaces
("What books has Melanie read?"; of two, the first: "What did Evan suggest Sam try?"), the
search matches the rest of the query, and the memories in that person's own words (linked to
them as speaker, memories.writes.entities) keep their fused relevance while everyone else's
are weighed by SPEAKER_OTHERS_WEIGHT.

What a person has done, likes or plans is mostly in what they said: in the LoCoMo
conversations 95% of the evidence of a question that names one of the two speakers is that
speaker's own turns. Ranked by the question's words and meaning alone, the other speaker's
replies about the same thing ("how was the pottery class, Mel?") come as readily as the
answer; so the name is taken out of what the signals match (unnamed), and the others' words
weigh less after fusion (prefer). A preference, not a filter: the others' words still rank,
and still seed the neighbours signal (a question asked in one turn brings the answer in the
next). The name is read by the entity extractor and resolved by name or alias among the
people who speak under the search's namespace filter and the key's reach only, so whether
someone speaks elsewhere never shows. docs/adr/0038 has the decision and its measurements,
docs/adr/0064 the questions that name two people.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass

from memories.retrieval.filters import SearchFilters
from memories.understanding.entities import extract
from memory_platform.database import prepared_cursor


@dataclass(frozen=True)
class Speaker:
    """The person a query names, as the namespaces searched know them."""

    name: str  # as the query wrote it
    entity_ids: tuple  # one entity per namespace the person speaks in

    def as_json(self) -> dict:
        return {"name": self.name, "entity_ids": [str(entity_id) for entity_id in self.entity_ids]}


SPEAKERS_SQL = """
    SELECT e.id, e.key, q.key FROM entities e
    JOIN unnest(%s::text[]) AS q(key)
      ON e.key = q.key OR EXISTS (SELECT 1 FROM entity_aliases a
                                  WHERE a.org_id = e.org_id AND a.entity_id = e.id AND a.key = q.key)
    WHERE e.org_id = %s AND e.kind = 'person' AND {scope}
      AND EXISTS (SELECT 1 FROM memory_entities me
                  WHERE me.org_id = e.org_id AND me.entity_id = e.id AND me.role = 'speaker')
"""


def named(org_id, query: str, filters: SearchFilters) -> tuple[Speaker | None, tuple[str, ...]]:
    """Who the query is about among the people who speak in the searched namespaces, and every
    name of theirs it says (as written, in the order written), for the signals to leave out
    (unnamed). One person named is who it is about. Of two or more, the first named, the
    question's subject ("What did Evan suggest Sam try?"), unless the first two are named as one
    subject ("What do Evan and Sam both enjoy?"): then no one, and a question about what they
    did together keeps their names, which is how they address each other where they talk."""
    mentions = {mention.key: mention.text for mention in extract(query)
                if mention.kind == "person" or mention.guessed}
    if not mentions:
        return None, ()
    within = filters.namespace_conditions("e.scope")
    with prepared_cursor() as cursor:  # reads by key: planned once a connection
        cursor.execute(SPEAKERS_SQL.format(scope=" AND ".join(sql for sql, _ in within) or "TRUE"),
                       [list(mentions), org_id, *(value for _, values in within for value in values)])
        rows = cursor.fetchall()
    if not rows:
        return None, ()
    entities, written = defaultdict(set), defaultdict(set)  # each person's, by entity key
    for entity_id, entity_key, written_key in rows:
        entities[entity_key].add(entity_id)
        written[entity_key].add(mentions[written_key])

    def position(name: str) -> int:
        found = re.search(rf"\b{re.escape(name)}\b", query)
        return found.start() if found else query.find(name)

    names = tuple(sorted(set().union(*written.values()), key=position))
    first_named = {person: min(written[person], key=position) for person in entities}
    ordered = sorted(entities, key=lambda person: position(first_named[person]))
    if len(ordered) > 1 and _together(query, first_named[ordered[0]], first_named[ordered[1]]):
        return None, (() if JOINT.search(query) else names)
    subject = ordered[0]
    return Speaker(name=first_named[subject], entity_ids=tuple(sorted(entities[subject], key=str))), names


JOINT = re.compile(r"\b(?:together|between|each other|one another)\b", re.IGNORECASE)


def _together(query: str, first: str, second: str) -> bool:
    """Whether the query names the two side by side, as one subject: "Evan and Sam", "Evan's or
    Sam's", "Evan, Sam"."""
    return re.search(rf"\b{re.escape(first)}(?:['’]s)?\s*(?:,|&|\band\b|\bor\b)\s*{re.escape(second)}\b",
                     query) is not None


SPOKEN_SQL = """
    SELECT DISTINCT me.memory_id FROM memory_entities me
    WHERE me.org_id = %s AND me.memory_id = ANY(%s::uuid[]) AND me.entity_id = ANY(%s::uuid[])
      AND me.role = 'speaker'
"""


def prefer(org_id, speaker: Speaker, fused: dict, others_weight: float) -> tuple[dict, set]:
    """The fused scores with those of memories not in the speaker's words multiplied by
    others_weight; and the memories that are."""
    with prepared_cursor() as cursor:
        cursor.execute(SPOKEN_SQL, [org_id, [str(memory_id) for memory_id in fused],
                                    [str(entity_id) for entity_id in speaker.entity_ids]])
        spoken = {row[0] for row in cursor.fetchall()}
    return {memory_id: score if memory_id in spoken else score * others_weight
            for memory_id, score in fused.items()}, spoken


def unnamed(query: str, names: tuple[str, ...]) -> str:
    """The query without the names of the people it names who speak there (and their
    possessives), for full text and the query's embedding: a speaker's name is in every one of
    their own memories ("Melanie: ...") and in the others' words to them ("Thanks, Sam!"), so
    matching it ranks whatever repeats it, and draws the query's meaning towards the others'
    replies. The query itself if nothing else is left."""
    rest = query
    for name in names:
        rest = re.sub(rf"\b{re.escape(name)}(?:['’]s)?\b", " ", rest)
    return rest if re.search(r"\w", rest) else query
