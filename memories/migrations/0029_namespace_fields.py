"""The end user's data boundary is called namespace in code, as everywhere else (issue 30).

The fields `scope` of memories, artifacts, memory_artifacts, retrieval_events and entities
are renamed `namespace`, kept on their column `scope` (db_column), and the indexes and
constraints over them are restated with the field's new name under their own names: only
Django's state changes, the database not at all (sqlmigrate prints no statement).
"""

import django.contrib.postgres.indexes
from django.db import migrations, models

MODELS = ["memory", "artifact", "memoryartifact", "retrievalevent", "entity"]
INDEXES = {
    "artifact": ["artifacts_scope"],
    "entity": ["entities_scope_mentions"],
    "memory": ["memories_scope_prefix", "memories_namespace_order", "memories_decaying"],
}
CONSTRAINTS = {
    "entity": ["entities_unique_name"],
    "memory": ["memories_scope_key_live_unique", "memories_content_hash_live_unique"],
}


class Migration(migrations.Migration):

    dependencies = [
        ('memories', '0028_memories_indexed'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                *[migrations.RemoveConstraint(model_name=model_name, name=name)
                  for model_name, names in CONSTRAINTS.items() for name in names],
                *[migrations.RemoveIndex(model_name=model_name, name=name)
                  for model_name, names in INDEXES.items() for name in names],
                *[operation
                  for model_name in MODELS
                  for operation in (
                      migrations.RenameField(model_name=model_name, old_name="scope", new_name="namespace"),
                      migrations.AlterField(
                          model_name=model_name, name="namespace",
                          field=models.CharField(blank=True, db_column="scope", default="", max_length=256),
                      ),
                  )],
                migrations.AddIndex(
                    model_name='artifact',
                    index=models.Index(fields=['org', 'namespace'], name='artifacts_scope'),
                ),
                migrations.AddIndex(
                    model_name='entity',
                    index=models.Index(fields=['org', 'namespace', '-mention_count'], name='entities_scope_mentions'),
                ),
                migrations.AddIndex(
                    model_name='memory',
                    index=models.Index(condition=models.Q(('deleted_at__isnull', True), ('status', 'active')), fields=['org', 'namespace', 'created_at', 'id'], name='memories_namespace_order'),
                ),
                migrations.AddIndex(
                    model_name='memory',
                    index=models.Index(models.F('org'), django.contrib.postgres.indexes.OpClass('namespace', name='varchar_pattern_ops'), condition=models.Q(('deleted_at__isnull', True)), name='memories_scope_prefix'),
                ),
                migrations.AddIndex(
                    model_name='memory',
                    index=models.Index(condition=models.Q(('deleted_at__isnull', True), ('status', 'active'), ('decay_rate__gt', 0)), fields=['org'], include=('id', 'created_at', 'reinforced_at', 'decay_rate', 'importance', 'expires_at', 'namespace'), name='memories_decaying'),
                ),
                migrations.AddConstraint(
                    model_name='entity',
                    constraint=models.UniqueConstraint(fields=('org', 'namespace', 'kind', 'key'), name='entities_unique_name'),
                ),
                migrations.AddConstraint(
                    model_name='memory',
                    constraint=models.UniqueConstraint(condition=models.Q(('deleted_at__isnull', True), ('status', 'active'), ('key__isnull', True)), fields=('org', 'agent', 'namespace', 'content_hash'), name='memories_content_hash_live_unique'),
                ),
                migrations.AddConstraint(
                    model_name='memory',
                    constraint=models.UniqueConstraint(condition=models.Q(('deleted_at__isnull', True), ('key__isnull', False)), fields=('org', 'namespace', 'key'), name='memories_scope_key_live_unique'),
                ),
            ],
        ),
    ]
