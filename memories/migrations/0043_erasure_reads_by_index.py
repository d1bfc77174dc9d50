"""Indexes for what an erasure's count and explain read (docs/adr/0052): every memory of a
namespace whatever its status (an erasure's and its count's), the retrieval events that returned
a memory (a GIN index on returned_memory_ids: explain's searches and an erasure's events), and
those asked in a namespace. Built CONCURRENTLY, so writes go on while they build (as 0041)."""

from django.contrib.postgres.indexes import GinIndex, OpClass
from django.contrib.postgres.operations import AddIndexConcurrently
from django.db import migrations, models


class Migration(migrations.Migration):
    atomic = False  # CREATE INDEX CONCURRENTLY cannot run in a transaction

    dependencies = [
        ('memories', '0042_embedding_switch_in_batches'),
    ]

    operations = [
        AddIndexConcurrently(
            model_name='memory',
            index=models.Index(models.F('org'), OpClass('namespace', name='varchar_pattern_ops'),
                               name='memories_namespace_all'),
        ),
        AddIndexConcurrently(
            model_name='retrievalevent',
            index=GinIndex(fields=['returned_memory_ids'], name='retrieval_events_returned'),
        ),
        AddIndexConcurrently(
            model_name='retrievalevent',
            index=models.Index(models.F('org'), OpClass('namespace', name='varchar_pattern_ops'),
                               name='retrieval_events_namespace'),
        ),
    ]
