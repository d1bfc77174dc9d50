"""Idempotency-Keys are stored as their SHA-256 hex (memories.api.idempotency.key_digest):
a client's key is free text, needed only to be matched again. Keys already stored are hashed
in place, as the service account (row-level security is forced on the owner too), so a retry
of a request made before the upgrade still finds its first response.
"""

from django.db import migrations

from memory_platform.schema import as_service_account

HASH_STORED_KEYS = as_service_account("""
    UPDATE idempotency_records SET key = encode(sha256(convert_to(key, 'UTF8')), 'hex');
""")


class Migration(migrations.Migration):
    dependencies = [
        ("memories", "0015_exact_dedup_within_a_namespace"),
    ]

    operations = [
        # Backwards the hashes stay: a key cannot be recovered from its hash, and expires in a day.
        migrations.RunSQL(HASH_STORED_KEYS, migrations.RunSQL.noop),
    ]
