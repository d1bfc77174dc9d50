"""A function that analyses the tables an import writes, which the runtime role may call.

An import writes an organisation's rows in one transaction; until autovacuum next analyses the
tables (a minute and more; at 1M rows, long after the import's own reads), the planner's
statistics do not know the organisation and cost its rows at one, and a join planned on that
can turn quadratic: the strength bands' count after the whole 1M import ran past 12 minutes
(docs/adr/0045). The runtime role owns no table, so it cannot ANALYZE; this function, owned by
the schema's owner and run with its rights (SECURITY DEFINER, a fixed search_path), analyses
exactly these tables and does nothing else. Only the runtime role may call it
(memory_platform.database.restrict_runtime_privileges grants it; PUBLIC's right is revoked here).
On a Citus cluster ANALYZE of a distributed table reaches every shard.
"""

from django.db import migrations

# memories.lifecycle.importing.TABLES, as of this migration (a test holds them equal).
TABLES = ("agents", "sessions", "entities", "entity_aliases", "artifacts", "provenance", "memories",
          "memory_versions", "memory_tags", "memory_usage", "memory_entities", "memory_artifacts",
          "memory_relationships", "memory_duplicate_candidates")

CREATE = f"""
    CREATE FUNCTION analyse_imported_tables() RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public AS $$
    BEGIN
        ANALYZE {", ".join(TABLES)};
    END
    $$;
    REVOKE ALL ON FUNCTION analyse_imported_tables() FROM PUBLIC;
"""


class Migration(migrations.Migration):
    dependencies = [("memories", "0057_returned_ids_index_without_pending_list")]

    operations = [migrations.RunSQL(CREATE, "DROP FUNCTION analyse_imported_tables()")]
