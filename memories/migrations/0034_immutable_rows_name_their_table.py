"""The append-only tables' trigger names the table in its message on a Citus cluster too.

forbid_rewrite() (memories 0002) raised "<TG_TABLE_NAME> rows are immutable". On a cluster
the trigger fires on the worker, on a shard, whose name carries the shard id
("memory_versions_102692 rows are immutable"). The function now looks the shard's table up in
Citus's metadata when it runs on a known shard, and only then: a table whose own name ends in
digits keeps it, and a long name Citus shortened for its shards is found all the same. The
look-up runs only on the way to the error, through EXECUTE, so on a PostgreSQL without Citus
nothing names Citus's catalog. Whether a change is refused is as before on both engines.

On a cluster whose tables are already distributed, CREATE OR REPLACE reaches the workers:
Citus propagated the function with the tables whose triggers use it, and propagates its
redefinition (docs/adr/0042).
"""

from django.db import migrations

NAMING_THE_TABLE = r"""
CREATE OR REPLACE FUNCTION forbid_rewrite() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    table_name text;
BEGIN
    IF (to_jsonb(NEW) - TG_ARGV) IS DISTINCT FROM (to_jsonb(OLD) - TG_ARGV) THEN
        IF to_regclass('pg_catalog.pg_dist_shard') IS NOT NULL THEN
            EXECUTE 'SELECT c.relname FROM pg_catalog.pg_dist_shard s
                     JOIN pg_catalog.pg_class c ON c.oid = s.logicalrelid
                     WHERE s.shardid = $1 AND pg_catalog.relation_is_a_known_shard($2)'
                INTO table_name USING substring(TG_TABLE_NAME FROM '_([0-9]+)$')::bigint, TG_RELID;
        END IF;
        RAISE EXCEPTION '% rows are immutable', coalesce(table_name, TG_TABLE_NAME)
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    RETURN NEW;
END
$$;
"""

# Back: the function as memories 0002 made it.
NAMING_THE_RELATION = """
CREATE OR REPLACE FUNCTION forbid_rewrite() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF (to_jsonb(NEW) - TG_ARGV) IS DISTINCT FROM (to_jsonb(OLD) - TG_ARGV) THEN
        RAISE EXCEPTION '% rows are immutable', TG_TABLE_NAME
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    RETURN NEW;
END
$$;
"""


class Migration(migrations.Migration):
    dependencies = [("memories", "0033_lexeme_deltas_primary_key")]

    operations = [migrations.RunSQL(NAMING_THE_TABLE, NAMING_THE_RELATION)]
