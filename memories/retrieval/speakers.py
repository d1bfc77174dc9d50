"""Who a question is about: when a query names one person who speaks in the searched
namespaces ("What books has Melanie read?"), the search matches the rest of the query, and the
memories in that person's own words (linked to them as speaker, memories.writes.entities)
keep their fused relevance while everyone else's are weighed by SPEAKER_OTHERS_WEIGHT.

What a person has done, likes or plans is mostly in what they said: in the LoCoMo
conversations 95% of the evidence of a question that names one of the two speakers is that
speaker's own turns. Ranked by the question's words and meaning alone, the other speaker's
replies about the same thing ("how was the pottery class, Mel?") come as readily as the
answer; so the name is taken out of what the signals match (unnamed), and the others' words
weigh less after fusion (prefer). A preference, not a filter: the others' words still rank,
and still seed the neighbours signal (a question asked in one turn brings the answer in the
next). The name is read by the entity extractor and resolved by name or alias among the
people who speak under the search's namespace filter and the key's reach only, so whether
someone speaks elsewhere never shows. docs/adr/0038 has the decision and its measurements.
"""

from __future__ import annotations

import re
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


def named(org_id, query: str, filters: SearchFilters) -> Speaker | None:
    """The one person who speaks in the searched namespaces that the query names; None when it
    names none of them, or several (a question about two people is about what passed
    between them)."""
    mentions = {mention.key: mention.text for mention in extract(query)
                if mention.kind == "person" or mention.guessed}
    if not mentions:
        return None
    within = filters.namespace_conditions("e.scope")
    with prepared_cursor() as cursor:  # reads by key: planned once a connection
        cursor.execute(SPEAKERS_SQL.format(scope=" AND ".join(sql for sql, _ in within) or "TRUE"),
                       [list(mentions), org_id, *(value for _, values in within for value in values)])
        rows = cursor.fetchall()
    people = {entity_key for _, entity_key, _ in rows}
    if len(people) != 1:
        return None
    return Speaker(name=mentions[rows[0][2]], entity_ids=tuple(sorted({entity_id for entity_id, _, _ in rows}, key=str)))


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


def unnamed(query: str, speaker: Speaker) -> str:
    """The query without the person's name (and its possessive), for full text and the query's
    embedding: the name is in every one of their own memories ("Melanie: ...") and in the
    others' words to them, so matching it ranks whatever repeats it, and draws the query's
    meaning towards the others' replies. The query itself if nothing else is left."""
    rest = re.sub(rf"\b{re.escape(speaker.name)}(?:['’]s)?\b", " ", query)
    return rest if re.search(r"\w", rest) else query
