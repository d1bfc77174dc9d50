"""Indexes for the reads issue 32 left linear (docs/adr/0051): the console's sorts by confidence,
importance and last change, paged by key (memories.keyset) like newest and oldest; its "Most
retrieved" sort, paged by key over memory_usage; and the namespaces that hold store items, which
LangGraph's list_namespaces walks one distinct namespace at a time instead of reading every item.
Built CONCURRENTLY, so writes go on while they build (as 0036)."""

from django.contrib.postgres.indexes import OpClass
from django.contrib.postgres.operations import AddIndexConcurrently
from django.db import migrations, models


class Migration(migrations.Migration):
    atomic = False  # CREATE INDEX CONCURRENTLY cannot run in a transaction

    dependencies = [
        ('memories', '0038_speakers_in_every_transcript_shape'),
        ('tenants', '0011_sessions_paged_by_key'),
    ]

    operations = [
        AddIndexConcurrently(
            model_name='memory',
            index=models.Index(models.F('org'), models.OrderBy(models.F('confidence'), descending=True),
                               models.OrderBy(models.F('created_at'), descending=True),
                               models.OrderBy(models.F('id'), descending=True), name='memories_org_confidence'),
        ),
        AddIndexConcurrently(
            model_name='memory',
            index=models.Index(models.F('org'), models.OrderBy(models.F('importance'), descending=True),
                               models.OrderBy(models.F('created_at'), descending=True),
                               models.OrderBy(models.F('id'), descending=True), name='memories_org_importance'),
        ),
        AddIndexConcurrently(
            model_name='memory',
            index=models.Index(models.F('org'), models.OrderBy(models.F('updated_at'), descending=True),
                               models.OrderBy(models.F('id'), descending=True), name='memories_org_changed'),
        ),
        AddIndexConcurrently(
            model_name='memory',
            index=models.Index(models.F('org'), OpClass('namespace', name='varchar_pattern_ops'),
                               condition=models.Q(('deleted_at__isnull', True), ('key__isnull', False)),
                               name='memories_store_namespaces'),
        ),
        AddIndexConcurrently(
            model_name='memoryusage',
            index=models.Index(models.F('org'), models.OrderBy(models.F('retrieval_count'), descending=True),
                               models.OrderBy(models.F('memory'), descending=True),
                               name='memory_usage_most_retrieved'),
        ),
    ]
