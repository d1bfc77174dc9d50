"""Full text finds a tenant's matches through its own lexemes: each memory's lexemes, tagged
with its organisation, in a generated column (tenant_lexemes) with the GIN index.

The GIN index of search_vector held one posting list per word for every tenant together. A
search decoded the lists of its words over the whole table and then dropped the other
tenants' rows: at 1M memories, 4.5 ms to find 46 rows of a tenant, 11 ms to find 4,428, and
19 ms p50 for a 1% tenant's full-text statement (docs/adr/0035). A GIN index on
(org_id, search_vector) would need btree_gin, which not every PostgreSQL has; an expression
index would need its function marked LEAKPROOF by a superuser, or row-level security keeps it
out of index conditions. A stored column needs neither: tsvector @@ tsquery is leakproof
already (memory_platform.local_services).

A tagged lexeme is the first 8 hex digits of the organisation's id followed by the lexeme
("3f2a9c1etea"). Two organisations sharing a tag share posting lists, which costs only speed:
every search also tests org_id, and row-level security holds.

search_vector keeps the positions ts_rank_cd ranks by; the new column holds lexemes only. It
is not in the Django model: nothing reads it back, and a model field would be loaded with
every memory. The old index goes: no statement uses search_vector's index any more.

At 1M memories the column adds 189 bytes to a row of ~2.3 kB (still three rows to a page),
and the new index is 130 MB where the old one was 90. A search of a 50%, 10% or 1% tenant
took 2-10 ms less at p50 and 5-20 at p95 end to end (docs/adr/0035).

Adding a stored column rewrites the table, and with it every index of the table, under an
exclusive lock: plan it as maintenance on a large table (at 1M memories on a 2-core machine,
rebuilding the shared HNSW index alone takes ~7 minutes, and the tenants' own ~11).
"""

from django.db import migrations

FUNCTION = """
CREATE FUNCTION memories_tenant_lexemes(org uuid, content text) RETURNS tsvector
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $$
    SELECT array_to_tsvector(ARRAY(
        SELECT left(org::text, 8) || lexeme
        FROM unnest(tsvector_to_array(to_tsvector('english'::regconfig, content))) AS lexeme))
$$
"""


class Migration(migrations.Migration):
    dependencies = [("memories", "0012_live_vectors_carry_ranking_columns")]

    operations = [
        migrations.RunSQL(FUNCTION, "DROP FUNCTION memories_tenant_lexemes(uuid, text)"),
        migrations.RunSQL(
            "ALTER TABLE memories ADD COLUMN tenant_lexemes tsvector "
            "GENERATED ALWAYS AS (memories_tenant_lexemes(org_id, content)) STORED",
            "ALTER TABLE memories DROP COLUMN tenant_lexemes",
        ),
        # A long memory's row keeps its text and tsvector, which every search reads, and lets
        # the tagged lexemes go out first: MAIN values move out of line only if nothing else
        # makes the row fit.
        migrations.RunSQL(
            "ALTER TABLE memories ALTER COLUMN content SET STORAGE MAIN, ALTER COLUMN search_vector SET STORAGE MAIN",
            "ALTER TABLE memories ALTER COLUMN content SET STORAGE EXTENDED, "
            "ALTER COLUMN search_vector SET STORAGE EXTENDED",
        ),
        migrations.RunSQL(
            "CREATE INDEX memories_tenant_fts ON memories USING gin (tenant_lexemes) WITH (fastupdate = off) "
            "WHERE deleted_at IS NULL",
            "DROP INDEX memories_tenant_fts",
        ),
        migrations.RemoveIndex("memory", "memories_fts"),
    ]
