"""Near-duplicates are found within one namespace only (a namespace is an end user's
boundary: docs/architecture.md, "Namespaces"). Pairs found before across two namespaces are
closed, so no operator resolves one user's memory into another's: they are marked resolved as
`other_namespace`, not deleted.

Runs as the service account: row-level security is forced on the owner too.
"""

from django.db import migrations

from memory_platform.schema import as_service_account

CLOSE_PAIRS_ACROSS_NAMESPACES = as_service_account("""
    UPDATE memory_duplicate_candidates pair
    SET resolved_at = now(), resolution = 'other_namespace'
    FROM memories written, memories candidate
    WHERE pair.resolved_at IS NULL
      AND written.org_id = pair.org_id AND written.id = pair.memory_id
      AND candidate.org_id = pair.org_id AND candidate.id = pair.candidate_id
      AND written.scope <> candidate.scope;
""")


class Migration(migrations.Migration):
    dependencies = [
        ("memories", "0013_fulltext_index_by_tenant"),
    ]

    operations = [
        # Backwards there is nothing to reopen: which pairs were closed here is not kept apart.
        migrations.RunSQL(CLOSE_PAIRS_ACROSS_NAMESPACES, migrations.RunSQL.noop),
    ]
