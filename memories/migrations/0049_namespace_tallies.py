"""Each namespace's memories counted as they change, so the reads that list namespaces (Mem0's
users, agents and runs with their memories' count; the store's namespaces) read one row per
namespace instead of every memory (docs/adr/0057).

memory_namespace_tallies holds, per (organisation, namespace, status), how many memories not
deleted there are (n) and, of them, how many are store items (items: a key), expire
(expiring) and are store items that expire (expiring_items); first_at, the earliest created_at
ever counted in, and last_at, the last time a memory arrived there, left or changed what is
counted (never lowered: a namespace's first and last activity, not its present rows').

Kept as the tallies of migrations 0035 and 0037 are: row triggers on memories append to
memory_namespace_tally_deltas (a memory inserted, deleted for good, deleted or restored, moved
to another namespace, its status, key or expiry changed), memories.lifecycle.tallies.fold moves
the deltas into the tallies every 30 s, and a reader adds both. Colocated with memories by
org_id on a Citus cluster, so a trigger's INSERT stays on the memory's node. The backfill counts
every memory once, while writes to memories wait for this transaction.
"""

from django.db import migrations

from memory_platform.schema import as_service_account, enable_tenant_rls

TABLES = """
CREATE TABLE memory_namespace_tallies (
    org_id uuid NOT NULL,
    scope varchar(256) NOT NULL,
    status varchar(16) NOT NULL,
    n bigint NOT NULL,
    items bigint NOT NULL,
    expiring bigint NOT NULL,
    expiring_items bigint NOT NULL,
    first_at timestamptz,
    last_at timestamptz,
    PRIMARY KEY (org_id, scope, status)
) WITH (fillfactor = 80);
CREATE TABLE memory_namespace_tally_deltas (
    org_id uuid NOT NULL,
    id uuid NOT NULL DEFAULT gen_random_uuid(),
    scope varchar(256) NOT NULL,
    status varchar(16) NOT NULL,
    n integer NOT NULL,
    items integer NOT NULL,
    expiring integer NOT NULL,
    expiring_items integer NOT NULL,
    first_at timestamptz,
    last_at timestamptz NOT NULL,
    PRIMARY KEY (org_id, id)
);
"""


def counted(row: str, sign: str) -> str:
    """The INSERT of one row's counts (`row`: OLD or NEW) into the deltas, with `sign`: a row
    counted in brings its created_at (first_at) and updated_at (last_at), one counted out the
    time it went."""
    first_at, last_at = ("NULL", "clock_timestamp()") if sign else (f"{row}.created_at", f"{row}.updated_at")
    return f"""
        INSERT INTO memory_namespace_tally_deltas (org_id, scope, status, n, items, expiring, expiring_items,
                                                   first_at, last_at)
        VALUES ({row}.org_id, {row}.scope, {row}.status, {sign}1, {sign}({row}.key IS NOT NULL)::int,
                {sign}({row}.expires_at IS NOT NULL)::int,
                {sign}({row}.key IS NOT NULL AND {row}.expires_at IS NOT NULL)::int, {first_at}, {last_at});"""


# What a namespace tally counts of a row (`{r}`: OLD or NEW): the update trigger fires when one differs.
ATTRIBUTES = ("{r}.deleted_at IS NULL", "{r}.scope", "{r}.status", "{r}.key IS NULL", "{r}.expires_at IS NULL")
CHANGED = " OR ".join(f"({a.format(r='OLD')}) IS DISTINCT FROM ({a.format(r='NEW')})" for a in ATTRIBUTES)

FUNCTIONS = f"""
CREATE FUNCTION memory_namespace_tallies_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    {counted("NEW", "")}
    RETURN NULL;
END $$;

CREATE FUNCTION memory_namespace_tallies_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    {counted("OLD", "-")}
    RETURN NULL;
END $$;

CREATE FUNCTION memory_namespace_tallies_updated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF OLD.deleted_at IS NULL THEN
        {counted("OLD", "-")}
    END IF;
    IF NEW.deleted_at IS NULL THEN
        {counted("NEW", "")}
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER memory_namespace_tallies_inserted AFTER INSERT ON memories FOR EACH ROW
    WHEN (NEW.deleted_at IS NULL) EXECUTE FUNCTION memory_namespace_tallies_inserted();
CREATE TRIGGER memory_namespace_tallies_deleted AFTER DELETE ON memories FOR EACH ROW
    WHEN (OLD.deleted_at IS NULL) EXECUTE FUNCTION memory_namespace_tallies_deleted();
CREATE TRIGGER memory_namespace_tallies_updated AFTER UPDATE ON memories FOR EACH ROW
    WHEN ({CHANGED}) EXECUTE FUNCTION memory_namespace_tallies_updated();
"""

DROP_FUNCTIONS = """
DROP TRIGGER memory_namespace_tallies_updated ON memories;
DROP TRIGGER memory_namespace_tallies_deleted ON memories;
DROP TRIGGER memory_namespace_tallies_inserted ON memories;
DROP FUNCTION memory_namespace_tallies_updated();
DROP FUNCTION memory_namespace_tallies_deleted();
DROP FUNCTION memory_namespace_tallies_inserted();
"""

# The same count as memories.lifecycle.tallies.RECOUNT_NAMESPACES, for every organisation, with
# the first and last activity the rows still show.
BACKFILL = as_service_account("""
INSERT INTO memory_namespace_tallies (org_id, scope, status, n, items, expiring, expiring_items, first_at, last_at)
SELECT org_id, scope, status, count(*), count(*) FILTER (WHERE key IS NOT NULL),
       count(*) FILTER (WHERE expires_at IS NOT NULL),
       count(*) FILTER (WHERE key IS NOT NULL AND expires_at IS NOT NULL), min(created_at), max(updated_at)
FROM memories WHERE deleted_at IS NULL
GROUP BY org_id, scope, status;
""")


class Migration(migrations.Migration):
    dependencies = [("memories", "0048_memories_deleted")]

    operations = [
        migrations.RunSQL(TABLES, "DROP TABLE memory_namespace_tally_deltas; DROP TABLE memory_namespace_tallies;"),
        enable_tenant_rls("memory_namespace_tallies"),
        enable_tenant_rls("memory_namespace_tally_deltas"),
        migrations.RunSQL(FUNCTIONS, DROP_FUNCTIONS),
        migrations.RunSQL(BACKFILL, migrations.RunSQL.noop),
    ]
