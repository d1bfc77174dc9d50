"""The memories created each day, counted as they change, so the stats' and the dashboard's
growth per day reads 30 rows instead of the last 30 days' memories (docs/adr/0045).

memory_day_tallies holds, per (organisation, UTC day of created_at), how many memories created
that day are not deleted. Kept as the tallies of migration 0035 are: row triggers on memories
append to memory_day_tally_deltas (a memory inserted, deleted for good, deleted or restored, or
its created_at changed), memories.lifecycle.tallies.fold moves the deltas into the tallies
every 30 s, and a reader adds both. The backfill counts every memory once.
"""

from django.db import migrations

from memory_platform.schema import as_service_account, enable_tenant_rls

TABLES = """
CREATE TABLE memory_day_tallies (
    org_id uuid NOT NULL,
    day date NOT NULL,
    created bigint NOT NULL,
    PRIMARY KEY (org_id, day)
) WITH (fillfactor = 80);
CREATE TABLE memory_day_tally_deltas (
    org_id uuid NOT NULL,
    id uuid NOT NULL DEFAULT gen_random_uuid(),
    day date NOT NULL,
    created integer NOT NULL,
    PRIMARY KEY (org_id, id)
);
"""

DAY = "({row}.created_at AT TIME ZONE 'UTC')::date"


def counted(row: str, sign: str) -> str:
    return (f"INSERT INTO memory_day_tally_deltas (org_id, day, created) "
            f"VALUES ({row}.org_id, {DAY.format(row=row)}, {sign}1);")


FUNCTIONS = f"""
CREATE FUNCTION memory_day_tallies_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    {counted("NEW", "")}
    RETURN NULL;
END $$;

CREATE FUNCTION memory_day_tallies_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    {counted("OLD", "-")}
    RETURN NULL;
END $$;

CREATE FUNCTION memory_day_tallies_updated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF OLD.deleted_at IS NULL THEN
        {counted("OLD", "-")}
    END IF;
    IF NEW.deleted_at IS NULL THEN
        {counted("NEW", "")}
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER memory_day_tallies_inserted AFTER INSERT ON memories FOR EACH ROW
    WHEN (NEW.deleted_at IS NULL) EXECUTE FUNCTION memory_day_tallies_inserted();
CREATE TRIGGER memory_day_tallies_deleted AFTER DELETE ON memories FOR EACH ROW
    WHEN (OLD.deleted_at IS NULL) EXECUTE FUNCTION memory_day_tallies_deleted();
CREATE TRIGGER memory_day_tallies_updated AFTER UPDATE ON memories FOR EACH ROW
    WHEN ((OLD.deleted_at IS NULL) IS DISTINCT FROM (NEW.deleted_at IS NULL)
          OR {DAY.format(row="OLD")} IS DISTINCT FROM {DAY.format(row="NEW")})
    EXECUTE FUNCTION memory_day_tallies_updated();
"""

DROP_FUNCTIONS = """
DROP TRIGGER memory_day_tallies_updated ON memories;
DROP TRIGGER memory_day_tallies_deleted ON memories;
DROP TRIGGER memory_day_tallies_inserted ON memories;
DROP FUNCTION memory_day_tallies_updated();
DROP FUNCTION memory_day_tallies_deleted();
DROP FUNCTION memory_day_tallies_inserted();
"""

# The same count as memories.lifecycle.tallies.RECOUNT_DAYS, for every organisation.
BACKFILL = as_service_account("""
INSERT INTO memory_day_tallies (org_id, day, created)
SELECT org_id, (created_at AT TIME ZONE 'UTC')::date, count(*) FROM memories WHERE deleted_at IS NULL
GROUP BY 1, 2;
""")


class Migration(migrations.Migration):
    dependencies = [("memories", "0035_memory_tallies"), ("memories", "0036_lists_paged_by_key")]

    operations = [
        migrations.RunSQL(TABLES, "DROP TABLE memory_day_tally_deltas; DROP TABLE memory_day_tallies;"),
        enable_tenant_rls("memory_day_tallies"),
        enable_tenant_rls("memory_day_tally_deltas"),
        migrations.RunSQL(FUNCTIONS, DROP_FUNCTIONS),
        migrations.RunSQL(BACKFILL, migrations.RunSQL.noop),
    ]
