"""Neighbours: the memories written just before and just after a search's best results, in
the same namespace, as a signal.

An agent that stores a conversation turn by turn asks about it later in other words than the
turn that answers: "What did Caroline adopt?" matches the turn where she says she adopted
someone, and the answer ("a puppy, Oscar") is the next turn. Seeded by the other signals'
fusion (its best NEIGHBOUR_SEEDS memories), this signal brings each seed's previous and next
memory in its namespace, in the order they were written, ranked just below their seed;
fusion weighs it as RRF_WEIGHTS["neighbours"]. A neighbour passes the search's own filters
(namespace, reach, status...) like any result. On the LoCoMo conversations it moved recall@10
from 0.543 to 0.599 (benchmarks/recall/README.md).

A seed that asks something (its text holds a "?") brings the memory after it, its reply, even
when that reply is a seed too: "Why did Caroline choose the adoption agency?" matches the
other's question ("What made you pick it?") before the answer ("I chose them 'cause they help
LGBTQ+ folks"). When the search is about one person who speaks there (speakers), only a reply
in that person's words is brought so: the question was put to them; and when it asks for what
goes by a name, only a reply that names something (naming; docs/adr/0069).
"""

from __future__ import annotations

from memories.models import live_sql
from memories.retrieval import naming
from memories.retrieval.filters import SearchFilters
from memories.retrieval.ranking import Hit
from memory_platform.database import prepared_cursor


def written_beside(row: str, side: str) -> str:
    """The live memory written right before (side "previous") or right after ("next") the
    memories row `row` in its namespace, as a subquery of its id: one step along
    memories_namespace_order (org, scope, created_at, id; live rows), an index scan that stops
    at its first row. Its one parameter is the organisation, a literal (on a Citus cluster,
    what keeps the statement on one shard). Full text reads the same order for the reply to a
    question (fulltext.ASKED)."""
    step, order = ("<", " DESC") if side == "previous" else (">", "")
    return (f"SELECT m.id FROM memories m WHERE m.org_id = %s AND m.scope = {row}.scope AND {live_sql('m')} "
            f"AND (m.created_at, m.id) {step} ({row}.created_at, {row}.id) "
            f"ORDER BY m.created_at{order}, m.id{order} LIMIT 1")


# For each seed, one step back and one forward along memories_namespace_order (org, scope,
# created_at, id; live rows), each an index scan that stops at its first row; whether the
# next one answers the seed (the seed asks, and the reply is in the words of the person the
# search is about, if any: a probe of memory_entities_unique by the reply). The organisation
# is a literal in every part: on a Citus cluster that is what keeps it on one shard.
NEIGHBOURS_SQL = """
    SELECT seed.id, near.id, near.side,
           near.side = 'next' AND strpos(seed.content, '?') > 0
           AND (cardinality(%s::uuid[]) = 0 OR EXISTS (
               SELECT 1 FROM memory_entities me
               WHERE me.org_id = %s AND me.memory_id = near.id AND me.role = 'speaker'
                 AND me.entity_id = ANY(%s::uuid[]))) AS answers
    FROM unnest(%s::uuid[]) WITH ORDINALITY AS wanted(id, position)
    JOIN memories seed ON seed.org_id = %s AND seed.id = wanted.id
    CROSS JOIN LATERAL (
        (SELECT before.id, 'previous' AS side FROM ({previous}) before)
        UNION ALL
        (SELECT after.id, 'next' FROM ({next}) after)
    ) near
    JOIN memories m ON m.org_id = %s AND m.id = near.id
    WHERE {where}
    ORDER BY wanted.position, near.side DESC
"""


def search(org_id, seeds: list, filters: SearchFilters, speaker_ids: tuple = (),
           answers_name: bool = False) -> list[Hit]:
    """Each seed's previous and next memory in its namespace that the filters let through,
    ranked one below its seed (the previous first); a memory next to several seeds takes the
    best of their ranks. Seeds are not each other's neighbours: two adjacent results would
    each lift the other, and undo the order the other signals gave them; except a seed's reply
    when the seed asks (in the words of speaker_ids' person, if given; naming something, if
    answers_name): a question lifts its answer, not the other way."""
    if not seeds:
        return []
    where, params = filters.where(org_id)
    speakers = [str(entity_id) for entity_id in speaker_ids]
    with prepared_cursor() as cursor:  # planned once a connection: its plan is the same for any seeds
        cursor.execute(NEIGHBOURS_SQL.format(previous=written_beside("seed", "previous"),
                                             next=written_beside("seed", "next"), where=where),
                       [speakers, org_id, speakers, [str(seed) for seed in seeds], org_id, org_id, org_id, org_id,
                        *params])
        rows = cursor.fetchall()
    if answers_name and (replies := [memory_id for _, memory_id, _, answers in rows if answers]):
        named = naming.naming(org_id, replies)  # a reply naming nothing stays a plain neighbour
        rows = [(seed, memory_id, side, answers and memory_id in named) for seed, memory_id, side, answers in rows]
    return below_seeds(seeds, rows)


def below_seeds(seeds: list, rows) -> list[Hit]:
    """(seed, memory, side[, answers]) rows in the seeds' order as hits, each ranked just below
    the seed that brought it (a neighbour found by this signal alone never ties with a seed that
    one other signal found), once, by its best seed; the seeds themselves left out unless they
    answer the seed that brought them."""
    hits, taken = [], set()
    for seed, memory_id, side, *answers in rows:
        answering = bool(answers and answers[0])
        if memory_id in taken or (memory_id in seeds and not answering):
            continue
        taken.add(memory_id)
        details = {"from": str(seed), "side": side, **({"answers": True} if answering else {})}
        hits.append(Hit(memory_id, 0.0, seeds.index(seed) + 2, details=details))
    return hits
