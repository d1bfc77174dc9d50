"""memory_lexeme_deltas gets a primary key, (org_id, id), and identifies its rows by it again
(REPLICA IDENTITY DEFAULT instead of FULL, 0032).

A Citus shard move or split that lets writes go on copies a table by logical replication and
then replays the changes made meanwhile; the replica identity is how the new copy finds the row
each UPDATE or DELETE names. With REPLICA IDENTITY FULL and no primary key, Citus builds the
new copy's indexes only after that replay, so every replayed DELETE (a fold deletes every delta
it reads) is a scan of the whole table: under steady writes the copy never caught up. With a
primary key its index is built first, and each replayed change is one index probe.

The rows are appended by the memories' triggers and never addressed by the product: the id is
a random uuid each row gets by default (rewriting the table once, which the fold keeps small).
"""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("memories", "0032_lexeme_deltas_replica_identity")]

    operations = [
        migrations.RunSQL(
            """
            ALTER TABLE memory_lexeme_deltas ADD COLUMN id uuid NOT NULL DEFAULT gen_random_uuid();
            ALTER TABLE memory_lexeme_deltas ADD CONSTRAINT memory_lexeme_deltas_pkey PRIMARY KEY (org_id, id);
            ALTER TABLE memory_lexeme_deltas REPLICA IDENTITY DEFAULT;
            """,
            """
            ALTER TABLE memory_lexeme_deltas REPLICA IDENTITY FULL;
            ALTER TABLE memory_lexeme_deltas DROP CONSTRAINT memory_lexeme_deltas_pkey;
            ALTER TABLE memory_lexeme_deltas DROP COLUMN id;
            """,
        ),
    ]
