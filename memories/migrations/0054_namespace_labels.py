"""The namespaces holding store items in their labels' order, on an index of the namespace
tallies: LangGraph's list_namespaces reads them a chunk at a time until its page is full
(memories.store.reads), not every namespace of the organisation (issue 32: 4,919 at 1M for a page
of 100; docs/adr/0060). Built CONCURRENTLY, so the folds and the reads go on meanwhile."""

from django.db import migrations

INDEX = """
CREATE INDEX CONCURRENTLY IF NOT EXISTS memory_namespace_tallies_labels
ON memory_namespace_tallies (org_id, (string_to_array(scope, '/') COLLATE "C")) WHERE items > 0
"""


class Migration(migrations.Migration):
    atomic = False  # CREATE INDEX CONCURRENTLY cannot run in a transaction

    dependencies = [("memories", "0053_relationship_tallies")]

    operations = [
        migrations.RunSQL(INDEX, "DROP INDEX CONCURRENTLY IF EXISTS memory_namespace_tallies_labels"),
    ]
