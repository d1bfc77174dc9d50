"""The word statistics a fold empties, named in a table for the delete that follows, instead of
in the fold's answer (memories.understanding.lexicon.fold; docs/adr/0061).

A fold deleted the statistics its deltas brought to no documents by reading their keys back into
the process and naming them all in a second statement: after the erasure of a whole
organisation, every word it ever used, and a million memories' vocabulary held the erasure's
process at 563 MB where its own work took 101 (benchmarks/scale, erasure.py). The fold now writes
those keys here, in the statement that folds, and deletes the statistics by a join on them;
nothing of them reaches the process. The table is empty outside a fold's transaction. Its rows
are words of the organisation's memories: row-level security as the statistics'; colocated with
them by org_id on a Citus cluster (the delete joins on it).
"""

from django.db import migrations

from memory_platform.schema import enable_tenant_rls


class Migration(migrations.Migration):
    dependencies = [("memories", "0055_relationship_ends_by_key")]

    operations = [
        migrations.RunSQL(
            "CREATE TABLE memory_lexeme_emptied (org_id uuid NOT NULL, lexeme text NOT NULL, "
            "PRIMARY KEY (org_id, lexeme))",
            "DROP TABLE memory_lexeme_emptied"),
        enable_tenant_rls("memory_lexeme_emptied"),
    ]
