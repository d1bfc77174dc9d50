"""A copy of each agent's hot set in PostgreSQL, so a set gone from Redis (an agent idle a day,
Redis emptied or restarted) answers from its last scoring instead of scoring every memory of
the agent before the answer (docs/adr/0058).

memory_hot_sets holds, per (organisation, agent), the ids and hot scores of its best memories
as last scored (memories.retrieval.hot), and when. Written by each scoring, beside the Redis
set; read only when the Redis set is gone. Kept without foreign keys, as the strength bands
(migration 0035): `manage.py flush` empties it beside the tables it truncates, and a deleted
organisation's or agent's row names only memory ids that no longer exist."""

from django.db import migrations

from memory_platform.schema import enable_tenant_rls

TABLE = """
CREATE TABLE memory_hot_sets (
    org_id uuid NOT NULL,
    agent_id uuid NOT NULL,
    ids uuid[] NOT NULL,
    scores double precision[] NOT NULL,
    scored_at timestamptz NOT NULL,
    PRIMARY KEY (org_id, agent_id)
);
"""


class Migration(migrations.Migration):
    dependencies = [("memories", "0049_namespace_tallies")]

    operations = [
        migrations.RunSQL(TABLE, "DROP TABLE memory_hot_sets;"),
        enable_tenant_rls("memory_hot_sets"),
    ]
