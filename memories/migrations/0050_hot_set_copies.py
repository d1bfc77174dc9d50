"""A copy of each agent's hot set in PostgreSQL, so a set gone from Redis (an agent idle a day,
Redis emptied or restarted) answers from its last scoring instead of scoring every memory of
the agent before the answer (docs/adr/0058).

memory_hot_sets holds, per (organisation, agent), the ids and hot scores of its best memories
as last scored (memories.retrieval.hot), and when. Written by each scoring, beside the Redis
set; read only when the Redis set is gone. Deleting an organisation deletes its rows; an
agent's row goes with the agent (its memories do too)."""

from django.db import migrations

from memory_platform.schema import enable_tenant_rls

TABLE = """
CREATE TABLE memory_hot_sets (
    org_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    agent_id uuid NOT NULL,
    ids uuid[] NOT NULL,
    scores double precision[] NOT NULL,
    scored_at timestamptz NOT NULL,
    PRIMARY KEY (org_id, agent_id),
    FOREIGN KEY (org_id, agent_id) REFERENCES agents (org_id, id) ON DELETE CASCADE
);
"""


class Migration(migrations.Migration):
    dependencies = [("memories", "0049_namespace_tallies"), ("tenants", "0011_sessions_paged_by_key")]

    operations = [
        migrations.RunSQL(TABLE, "DROP TABLE memory_hot_sets;"),
        enable_tenant_rls("memory_hot_sets"),
    ]
