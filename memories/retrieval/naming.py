"""Answers that name something, for a question asking for what goes by a name.

A question for the members of a class whose members are called by a name ("What books has Tim
read?", "Which city did John recommend?"; memories.understanding.asks) is answered by memories
that name one: the title, the city, the team. After fusion, the memories that name nothing
weigh NAMELESS_WEIGHT: no extractor link (memories.writes.entities) to an entity other than a
date, a quantity or a person who speaks, since a reply addresses the other by name ("Thanks,
Caroline!") without naming anything it is about. An entity belongs to one namespace, so who
speaks is read in the memory's own: someone who speaks only elsewhere is, here, someone named.
A preference, not a filter: a nameless memory still ranks, and one the other signals put far
ahead stays ahead. In the LoCoMo conversations 40% of the evidence of a list question's top 20
names something of this kind, against 12% of the other memories there; docs/adr/0067 has the
decision and its measurements.
"""

from __future__ import annotations

from memory_platform.database import prepared_cursor

NAMING_SQL = """
    SELECT DISTINCT me.memory_id FROM memory_entities me JOIN entities e ON e.org_id = me.org_id AND e.id = me.entity_id
    WHERE me.org_id = %s AND me.memory_id = ANY(%s::uuid[]) AND me.role = 'mentioned'
      AND e.kind NOT IN ('date', 'quantity')
      AND NOT EXISTS (SELECT 1 FROM memory_entities spoken
                      WHERE spoken.org_id = me.org_id AND spoken.entity_id = me.entity_id AND spoken.role = 'speaker')
"""


def naming(org_id, memory_ids) -> set:
    """Those of the memories that name something."""
    with prepared_cursor() as cursor:
        cursor.execute(NAMING_SQL, [org_id, [str(memory_id) for memory_id in memory_ids]])
        return {row[0] for row in cursor.fetchall()}


def prefer(org_id, fused: dict, nameless_weight: float) -> tuple[dict, set]:
    """The fused scores with those of memories that name nothing multiplied by
    nameless_weight; and the memories that name something."""
    named = naming(org_id, fused)
    return {memory_id: score if memory_id in named else score * nameless_weight
            for memory_id, score in fused.items()}, named
