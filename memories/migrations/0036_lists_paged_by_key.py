"""The lists of memories and of entities paged by key (memories.keyset, docs/adr/0046): each
walked from an index in its order, newest first (deleted ones too, for the lists that include
them) and the most mentioned first with ties by id (entities), instead of a sort of the whole
organisation per page; and the store's items without a query, the last updated first (its
first pages). Built CONCURRENTLY, so writes go on while they build (as 0027)."""

from django.contrib.postgres.operations import AddIndexConcurrently
from django.db import migrations, models


class Migration(migrations.Migration):
    atomic = False  # CREATE INDEX CONCURRENTLY cannot run in a transaction

    dependencies = [
        ('memories', '0034_immutable_rows_name_their_table'),
        ('tenants', '0011_sessions_paged_by_key'),
    ]

    operations = [
        AddIndexConcurrently(
            model_name='entity',
            index=models.Index(models.F('org'), models.OrderBy(models.F('mention_count'), descending=True),
                               models.OrderBy(models.F('id'), descending=True), name='entities_org_mentions'),
        ),
        AddIndexConcurrently(
            model_name='memory',
            index=models.Index(models.F('org'), models.OrderBy(models.F('created_at'), descending=True),
                               models.OrderBy(models.F('id'), descending=True), name='memories_org_recent'),
        ),
        AddIndexConcurrently(
            model_name='memory',
            index=models.Index(models.F('org'), models.OrderBy(models.F('updated_at'), descending=True),
                               models.F('id'), condition=models.Q(('deleted_at__isnull', True), ('key__isnull', False)),
                               name='memories_store_recent'),
        ),
    ]
