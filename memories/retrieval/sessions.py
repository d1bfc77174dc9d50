"""Sessions: the other memories of the sessions a search's best results belong to, ranked by
meaning, as a signal (docs/adr/0054).

A conversation is told in sittings, and a question about it is mostly answered in the sitting
its best match comes from: "When did Caroline go to the support group?" matches the turn that
names the group, and the date, the reason or the reply sit a few turns away in the same
sitting, too far for the neighbours signal (one turn each way) and with too few of the
question's words for full text. A session here is what the turns of one sitting share when
written: their namespace and their event time (the sitting's date, as benchmarks/recall writes
each LoCoMo session). The fusion so far names the sessions: those of its best memories, in its
order, up to SESSION_SEEDS of them (a session counts as good as its best memory); their
memories are ranked by cosine to the query and fused as RRF_WEIGHTS["session"].

Measured on LoCoMo (benchmarks/recall/README.md, issue 34 round two): with the sessions voted
for by the sum of their candidates' scores instead, the sittings where the question's words
recur most took the top 10 and every category lost; by their best memory, at weight 0.3,
R@10 and R@20 rose on both split halves. Memories without an event time belong to no session;
memories whose event times all differ make sessions of one, which bring nothing new.
"""

from __future__ import annotations

from memories.retrieval.filters import SearchFilters
from memories.retrieval.ranking import Hit, ranked_hits, ranking_columns, usage_join
from memories.vectors.embeddings import vector_literal
from memory_platform.database import prepared_cursor

# The first `sessions` distinct (namespace, event time) of the seeds, in the seeds' order;
# then those sessions' memories the filters let through, nearest the query first, each found
# through memories_namespace_event_time (org, scope, event_time; live rows). The organisation
# is a literal in every part: on a Citus cluster that keeps it on one shard.
SESSION_TURNS_SQL = """
    WITH seed AS (
        SELECT DISTINCT ON (s.scope, s.event_time) s.scope, s.event_time, wanted.position
        FROM unnest(%s::uuid[]) WITH ORDINALITY AS wanted(id, position)
        JOIN memories s ON s.org_id = %s AND s.id = wanted.id
        WHERE s.event_time IS NOT NULL
        ORDER BY s.scope, s.event_time, wanted.position
    ), chosen AS (
        SELECT scope, event_time FROM seed ORDER BY position LIMIT %s
    )
    SELECT m.id, 1 - (m.embedding <=> %s::vector) AS similarity, {columns}
    FROM chosen
    JOIN memories m ON m.org_id = %s AND m.scope = chosen.scope AND m.event_time = chosen.event_time
    {usage}
    WHERE {where} AND m.embedding IS NOT NULL
    ORDER BY similarity DESC, m.id
    LIMIT %s
"""


def search(org_id, query: list[float], seeds: list, filters: SearchFilters, sessions: int, k: int) -> list[Hit]:
    """The k memories nearest the query among those of the first `sessions` sessions of the
    seeds (best first), that the filters let through."""
    if not seeds or sessions <= 0:
        return []
    where, params = filters.where(org_id)
    sql = SESSION_TURNS_SQL.format(columns=ranking_columns("m"), usage=usage_join("m"), where=where)
    with prepared_cursor() as cursor:  # planned once a connection: the sessions' index whatever the seeds
        cursor.execute(sql, [[str(seed) for seed in seeds], org_id, sessions, vector_literal(query), org_id,
                             org_id, *params, k])
        return ranked_hits(cursor.fetchall(), "similarity")
