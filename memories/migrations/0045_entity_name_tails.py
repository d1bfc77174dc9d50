"""An entity is found by the start of any word of its name or of an alias (memories.reads.selectors.
entity_list, docs/adr/0053) through an index, instead of by testing every entity of the
organisation.

The test was `key LIKE 'smi%' OR key LIKE '% smi%'`, on the entities and on their aliases. LIKE is
not leakproof, so under row-level security it is never an index condition: the list walked the
organisation's entities, the most mentioned first, until it had a page of matches, which for a
rare text is all of them. pg_trgm is not in the embedded PostgreSQL, and its operators are not
leakproof either.

Each entity and each alias now keeps, in a generated column (name_tails), its key's tails: the
key from the start of each of its words ("john smith": "john smith", "smith"), each tagged with
the first 8 hex digits of the organisation's id, as the memories' tenant_lexemes (migration
0013: no btree_gin, and tsvector @@ tsquery is leakproof, so the GIN index serves it under
row-level security). A text matches the start of a word of the key exactly when it is a prefix
of one of its tails, which a prefix query ('3f2a9c1esmi':*) finds in the index. A tail is the key
from position 1 and after every space, so the match is the old LIKE's whatever the key's spaces.

Like tenant_lexemes the column is not in the Django model: nothing reads it back.
"""

from django.db import migrations

FUNCTION = """
CREATE FUNCTION entity_name_tails(org uuid, key text) RETURNS tsvector
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $$
    SELECT array_to_tsvector(ARRAY(
        SELECT left(org::text, 8) || substr(key, place)
        FROM generate_series(1, length(key)) AS place
        WHERE place = 1 OR substr(key, place - 1, 1) = ' '))
$$
"""


def tails(table: str) -> list:
    return [
        migrations.RunSQL(
            f"ALTER TABLE {table} ADD COLUMN name_tails tsvector "
            f"GENERATED ALWAYS AS (entity_name_tails(org_id, key)) STORED",
            f"ALTER TABLE {table} DROP COLUMN name_tails",
        ),
        migrations.RunSQL(
            f"CREATE INDEX {table}_name_tails ON {table} USING gin (name_tails) WITH (fastupdate = off)",
            f"DROP INDEX {table}_name_tails",
        ),
    ]


class Migration(migrations.Migration):
    dependencies = [("memories", "0042_embedding_switch_in_batches")]

    operations = [
        migrations.RunSQL(FUNCTION, "DROP FUNCTION entity_name_tails(uuid, text)"),
        *tails("entities"),
        *tails("entity_aliases"),
    ]
