"""The organisation's relationships counted by type as they change, so its stats read a row per
type instead of every relationship (issue 32: at 1M memories, 169,450 relationships less those
touching a deleted memory, 61 of the stats' 80 ms; docs/adr/0060).

A relationship counts while both its memories are not deleted. Each one carries whether it is
counted (memory_relationships.counted, the database's alone: no model field, so no write of the
application sets it), and the counts follow the flags:

- a relationship inserted is counted if neither of its memories is deleted (a BEFORE trigger
  sets the flag, whatever the insert said, after taking the key-share lock on both memories its
  foreign keys would take: a transaction deleting one through the application, which holds it
  FOR UPDATE, is waited for); one whose memories change is decided again;
- a memory deleted uncounts its counted relationships, a memory restored counts those whose
  other memory is not deleted (an AFTER trigger on memories: the rows a statement deleted or
  restored together are all visible to it, so a relationship between two of them is counted
  out or in once). Two transactions deleting a relationship's two memories at once meet on its
  row: the second one's UPDATE waits for the first and then finds it uncounted (what no lock
  orders, a relationship made while a plain UPDATE deletes its memory, or two restores at once,
  memories.lifecycle.tallies.repair_relationships sets right within the hour);
- a memory deleted for good takes its relationships with it (erasure deletes them first, the
  foreign keys cascade): each counted one is counted out as it goes, so a hard delete reads
  nothing more than it did;
- every change of a relationship's flag or type appends to memory_relationship_tally_deltas,
  which memories.lifecycle.tallies.fold moves into memory_relationship_tallies every 30 s, as
  the memories' tallies (migrations 0035, 0037, 0049). Colocated with memories by org_id on a
  Citus cluster: a trigger's statements stay in the organisation's shard group.

The backfill uncounts the relationships touching a deleted memory (a few percent) and counts the
rest, before the triggers exist, while writes to both tables wait for this transaction (1.7 s with
migration 0054 at 1M memories, 169,450 relationships, in benchmarks/scale).
"""

from django.db import migrations

from memory_platform.schema import as_service_account, enable_tenant_rls

# Both tables' writes wait from the first statement to the commit: the flags and the counts are
# settled before the triggers that keep them exist, with nothing changing in between.
TABLES = """
LOCK TABLE memories IN SHARE ROW EXCLUSIVE MODE;
ALTER TABLE memory_relationships ADD COLUMN counted boolean NOT NULL DEFAULT true;
CREATE TABLE memory_relationship_tallies (
    org_id uuid NOT NULL,
    relation_type varchar(16) NOT NULL,
    n bigint NOT NULL,
    PRIMARY KEY (org_id, relation_type)
) WITH (fillfactor = 80);
CREATE TABLE memory_relationship_tally_deltas (
    org_id uuid NOT NULL,
    id uuid NOT NULL DEFAULT gen_random_uuid(),
    relation_type varchar(16) NOT NULL,
    n integer NOT NULL,
    PRIMARY KEY (org_id, id)
);
"""

DROP_TABLES = """
DROP TABLE memory_relationship_tally_deltas;
DROP TABLE memory_relationship_tallies;
ALTER TABLE memory_relationships DROP COLUMN counted;
"""

# Neither memory of the relationship `{r}` is deleted (the same test as
# memories.lifecycle.tallies.RECOUNT_RELATIONSHIPS).
ENDS_KEPT = ("NOT EXISTS (SELECT FROM memories m WHERE m.org_id = {r}.org_id "
             "AND m.id IN ({r}.source_id, {r}.target_id) AND m.deleted_at IS NOT NULL)")


def delta(row: str, sign: str) -> str:
    return (f"INSERT INTO memory_relationship_tally_deltas (org_id, relation_type, n) "
            f"VALUES ({row}.org_id, {row}.relation_type, {sign}1);")


# On a Citus cluster already distributed, Citus asks for the setting before it makes a trigger on
# a distributed table (memory_platform.distribution); elsewhere it is a setting nothing reads.
FUNCTIONS = f"""
SELECT set_config('citus.enable_unsafe_triggers', 'on', true);
CREATE FUNCTION memory_relationship_counted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- The lock its foreign keys take a moment later, taken first: a transaction deleting or
    -- restoring either memory through the application holds it FOR UPDATE, and is waited for.
    PERFORM FROM memories m WHERE m.org_id = NEW.org_id AND m.id IN (NEW.source_id, NEW.target_id) FOR KEY SHARE;
    NEW.counted := {ENDS_KEPT.format(r="NEW")};
    RETURN NEW;
END $$;

CREATE FUNCTION memory_relationship_tallies_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    {delta("NEW", "")}
    RETURN NULL;
END $$;

CREATE FUNCTION memory_relationship_tallies_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    {delta("OLD", "-")}
    RETURN NULL;
END $$;

CREATE FUNCTION memory_relationship_tallies_updated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF OLD.counted THEN
        {delta("OLD", "-")}
    END IF;
    IF NEW.counted THEN
        {delta("NEW", "")}
    END IF;
    RETURN NULL;
END $$;

CREATE FUNCTION memory_relationships_ends_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.deleted_at IS NOT NULL THEN
        UPDATE memory_relationships r SET counted = false
        WHERE r.org_id = NEW.org_id AND (r.source_id = NEW.id OR r.target_id = NEW.id) AND r.counted;
    ELSE
        UPDATE memory_relationships r SET counted = true
        WHERE r.org_id = NEW.org_id AND (r.source_id = NEW.id OR r.target_id = NEW.id) AND NOT r.counted
          AND {ENDS_KEPT.format(r="r")};
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER memory_relationship_counted BEFORE INSERT ON memory_relationships FOR EACH ROW
    EXECUTE FUNCTION memory_relationship_counted();
CREATE TRIGGER memory_relationship_recounted BEFORE UPDATE OF source_id, target_id ON memory_relationships
    FOR EACH ROW WHEN (OLD.source_id IS DISTINCT FROM NEW.source_id OR OLD.target_id IS DISTINCT FROM NEW.target_id)
    EXECUTE FUNCTION memory_relationship_counted();
CREATE TRIGGER memory_relationship_tallies_inserted AFTER INSERT ON memory_relationships FOR EACH ROW
    WHEN (NEW.counted) EXECUTE FUNCTION memory_relationship_tallies_inserted();
CREATE TRIGGER memory_relationship_tallies_deleted AFTER DELETE ON memory_relationships FOR EACH ROW
    WHEN (OLD.counted) EXECUTE FUNCTION memory_relationship_tallies_deleted();
CREATE TRIGGER memory_relationship_tallies_updated AFTER UPDATE ON memory_relationships FOR EACH ROW
    WHEN (OLD.counted IS DISTINCT FROM NEW.counted OR OLD.relation_type IS DISTINCT FROM NEW.relation_type)
    EXECUTE FUNCTION memory_relationship_tallies_updated();
CREATE TRIGGER memory_relationships_ends_changed AFTER UPDATE OF deleted_at ON memories FOR EACH ROW
    WHEN ((OLD.deleted_at IS NULL) IS DISTINCT FROM (NEW.deleted_at IS NULL))
    EXECUTE FUNCTION memory_relationships_ends_changed();
"""

DROP_FUNCTIONS = """
DROP TRIGGER memory_relationships_ends_changed ON memories;
DROP TRIGGER memory_relationship_tallies_updated ON memory_relationships;
DROP TRIGGER memory_relationship_tallies_deleted ON memory_relationships;
DROP TRIGGER memory_relationship_tallies_inserted ON memory_relationships;
DROP TRIGGER memory_relationship_recounted ON memory_relationships;
DROP TRIGGER memory_relationship_counted ON memory_relationships;
DROP FUNCTION memory_relationships_ends_changed();
DROP FUNCTION memory_relationship_tallies_updated();
DROP FUNCTION memory_relationship_tallies_deleted();
DROP FUNCTION memory_relationship_tallies_inserted();
DROP FUNCTION memory_relationship_counted();
"""

BACKFILL = as_service_account(f"""
UPDATE memory_relationships r SET counted = false WHERE NOT {ENDS_KEPT.format(r="r")};
INSERT INTO memory_relationship_tallies (org_id, relation_type, n)
SELECT org_id, relation_type, count(*) FROM memory_relationships WHERE counted GROUP BY org_id, relation_type;
""")


class Migration(migrations.Migration):
    dependencies = [("memories", "0052_decaying_by_namespace")]

    operations = [
        migrations.RunSQL(TABLES, DROP_TABLES),
        enable_tenant_rls("memory_relationship_tallies"),
        enable_tenant_rls("memory_relationship_tally_deltas"),
        # Before the triggers: the backfill's flags are no change to count.
        migrations.RunSQL(BACKFILL, migrations.RunSQL.noop),
        migrations.RunSQL(FUNCTIONS, DROP_FUNCTIONS),
    ]
