"""The covering index of live vectors also holds importance, confidence and created_at.

An exact vector search reads a tenant's vectors from this index alone (an index-only scan);
the final ranking needs those three columns of the rows it returns, which cost a second read
of each by primary key (3.2 ms of an exact search at 1M memories, planning included;
docs/adr/0035). They add 24 bytes to entries of ~1.6 kB.

Built CONCURRENTLY under a temporary name, so writes go on meanwhile and exact searches keep
the old index until the new one is ready; then the old one goes and the new one takes its name.
"""

from django.contrib.postgres.operations import AddIndexConcurrently, RemoveIndexConcurrently
from django.db import migrations, models
from django.db.models import Q

LIVE = Q(status="active", deleted_at__isnull=True)


def live_vectors(name: str, include: list[str]) -> models.Index:
    return models.Index(fields=["org"], include=include, condition=LIVE & Q(embedding__isnull=False), name=name)


class Migration(migrations.Migration):
    atomic = False  # CREATE INDEX CONCURRENTLY cannot run in a transaction

    dependencies = [
        ("memories", "0011_memory_rows_stored_whole"),
    ]

    operations = [
        AddIndexConcurrently("memory", live_vectors(
            "memories_live_vectors_new",
            ["id", "embedding", "expires_at", "importance", "confidence", "created_at"])),
        RemoveIndexConcurrently("memory", "memories_live_vectors"),
        migrations.RenameIndex("memory", new_name="memories_live_vectors", old_name="memories_live_vectors_new"),
    ]
