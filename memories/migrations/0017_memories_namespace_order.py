"""A namespace's live memories in the order they were written (org, scope, created_at, id):
the index a search's neighbours signal steps along (memories.retrieval.neighbours). Built
CONCURRENTLY, so writes go on while a large table is indexed."""

from django.contrib.postgres.operations import AddIndexConcurrently
from django.db import migrations, models


class Migration(migrations.Migration):
    atomic = False  # CREATE INDEX CONCURRENTLY cannot run in a transaction

    dependencies = [
        ("memories", "0016_idempotency_keys_stored_hashed"),
    ]

    operations = [
        AddIndexConcurrently(
            model_name="memory",
            index=models.Index(
                fields=["org", "scope", "created_at", "id"],
                condition=models.Q(("deleted_at__isnull", True), ("status", "active")),
                name="memories_namespace_order",
            ),
        ),
    ]
