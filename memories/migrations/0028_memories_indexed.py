"""A memory may be kept out of search by meaning (docs/adr/0040, the LangGraph store's index=False).

* memories.indexed (default true): false for a store item that is never embedded. Such a
  memory is not pending: the partial index of memories waiting for their embedding (what the
  embedding jobs read) leaves it out, and a check keeps it without a vector.
"""

from django.contrib.postgres.operations import (
    AddIndexConcurrently,
    RemoveIndexConcurrently,
)
from django.db import migrations, models
from django.db.models import Q


class Migration(migrations.Migration):
    atomic = False  # CREATE INDEX CONCURRENTLY cannot run in a transaction

    dependencies = [
        ('memories', '0027_memories_embedding_model_index'),
    ]

    operations = [
        migrations.AddField(
            model_name='memory',
            name='indexed',
            field=models.BooleanField(db_default=True, default=True),
        ),
        migrations.AddConstraint(
            model_name='memory',
            constraint=models.CheckConstraint(condition=Q(indexed=True) | Q(embedding__isnull=True),
                                              name='memories_unindexed_has_no_vector'),
        ),
        RemoveIndexConcurrently("memory", "memories_embedding_pending"),
        AddIndexConcurrently("memory", models.Index(
            fields=["org", "created_at"], condition=Q(embedding__isnull=True, deleted_at__isnull=True, indexed=True),
            name="memories_embedding_pending")),
    ]
