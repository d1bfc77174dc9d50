"""memory_lexeme_deltas is the one tenant table without a primary key (its rows are appended
by the memories' triggers and folded away by a job, never addressed one by one). A Citus shard
move that does not block writes copies a table by logical replication, which needs to identify
the rows an UPDATE or DELETE touches: REPLICA IDENTITY FULL identifies them by all their
columns (the subscriber finds them through the (org_id, lexeme) index). It only changes what
is written to the WAL at wal_level logical (the cluster's nodes): a deleted delta's columns;
on one PostgreSQL at the default wal_level it changes nothing (docs/adr/0042)."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("memories", "0031_shapes_citus_accepts")]

    operations = [
        migrations.RunSQL("ALTER TABLE memory_lexeme_deltas REPLICA IDENTITY FULL",
                          "ALTER TABLE memory_lexeme_deltas REPLICA IDENTITY DEFAULT"),
    ]
