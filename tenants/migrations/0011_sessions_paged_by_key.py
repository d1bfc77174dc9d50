"""The list of sessions paged by key (memories.keyset, docs/adr/0046): walked from an index,
newest first, instead of a sort of the organisation's sessions per page. Built CONCURRENTLY."""

from django.contrib.postgres.operations import AddIndexConcurrently
from django.db import migrations, models


class Migration(migrations.Migration):
    atomic = False  # CREATE INDEX CONCURRENTLY cannot run in a transaction

    dependencies = [
        ('tenants', '0010_member_organisations_without_subquery'),
    ]

    operations = [
        AddIndexConcurrently(
            model_name='session',
            index=models.Index(models.F('org'), models.OrderBy(models.F('started_at'), descending=True),
                               models.OrderBy(models.F('id'), descending=True), name='sessions_org_started'),
        ),
    ]
