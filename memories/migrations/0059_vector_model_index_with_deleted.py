"""The index of memories by the model of their vector (memories_embedding_model, 0027) covers
deleted memories too: the embedding switch's last step (memories.lifecycle.reembed._flip) asks
which memories, deleted or not, still hold another model's vector, and at 1M memories a scan of
the table took 0.7 s warm and 2.2 s cold, twice, while the memories it changes stayed locked.
The embedding sweep asks the same of it (memories.jobs.of_another_model, deleted ones too now). Built
CONCURRENTLY before the old one is dropped, so writes go on and no moment is without one."""

from django.contrib.postgres.operations import AddIndexConcurrently, RemoveIndexConcurrently
from django.db import migrations, models


class Migration(migrations.Migration):
    atomic = False  # CREATE / DROP INDEX CONCURRENTLY cannot run in a transaction

    dependencies = [
        ('memories', '0058_analyse_imported_tables'),
    ]

    operations = [
        AddIndexConcurrently(
            model_name='memory',
            index=models.Index(condition=models.Q(('embedding__isnull', False)), fields=['embedding_model'],
                               name='memories_vector_model'),
        ),
        RemoveIndexConcurrently(model_name='memory', name='memories_embedding_model'),
    ]
