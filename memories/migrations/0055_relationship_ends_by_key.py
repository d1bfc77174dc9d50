"""A relationship's memories looked up by their key, one at a time, in the triggers of migration
0053 (docs/adr/0060, docs/adr/0061).

0053's BEFORE INSERT trigger locked and tested both memories in one statement each (`m.id IN
(NEW.source_id, NEW.target_id)`): a list the planner does not cost as the two unique lookups it
is. PL/pgSQL keeps a statement's plan for the session, and one made while the statistics
described a smaller table can walk another index of the organisation's memories for every
relationship inserted: loading the scale benchmark's million memories in one transaction, each
chunk's relationships took 40 s of its 60, growing with the table. Each memory is now read by
the primary key's equality (org_id, id), which no estimate can make dearer than another index:
one statement locks it and says whether it is deleted. The restore's recount in
memory_relationships_ends_changed tests each end the same way.
"""

from django.db import migrations

COUNTED = """
CREATE OR REPLACE FUNCTION memory_relationship_counted() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    source_kept boolean;
    target_kept boolean;
BEGIN
    -- The lock its foreign keys take a moment later, taken first: a transaction deleting or
    -- restoring either memory through the application holds it FOR UPDATE, and is waited for.
    SELECT m.deleted_at IS NULL INTO source_kept FROM memories m
    WHERE m.org_id = NEW.org_id AND m.id = NEW.source_id FOR KEY SHARE;
    SELECT m.deleted_at IS NULL INTO target_kept FROM memories m
    WHERE m.org_id = NEW.org_id AND m.id = NEW.target_id FOR KEY SHARE;
    -- (a memory not there is the foreign key's to refuse)
    NEW.counted := coalesce(source_kept, true) AND coalesce(target_kept, true);
    RETURN NEW;
END $$;
"""

END_KEPT = ("NOT EXISTS (SELECT FROM memories m WHERE m.org_id = r.org_id AND m.id = r.{end} "
            "AND m.deleted_at IS NOT NULL)")
ENDS_CHANGED = """
CREATE OR REPLACE FUNCTION memory_relationships_ends_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.deleted_at IS NOT NULL THEN
        UPDATE memory_relationships r SET counted = false
        WHERE r.org_id = NEW.org_id AND (r.source_id = NEW.id OR r.target_id = NEW.id) AND r.counted;
    ELSE
        UPDATE memory_relationships r SET counted = true
        WHERE r.org_id = NEW.org_id AND (r.source_id = NEW.id OR r.target_id = NEW.id) AND NOT r.counted
          AND {kept};
    END IF;
    RETURN NULL;
END $$;
"""

# 0053's, as they were.
ENDS_KEPT_0053 = ("NOT EXISTS (SELECT FROM memories m WHERE m.org_id = {r}.org_id "
                  "AND m.id IN ({r}.source_id, {r}.target_id) AND m.deleted_at IS NOT NULL)")
COUNTED_0053 = f"""
CREATE OR REPLACE FUNCTION memory_relationship_counted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM FROM memories m WHERE m.org_id = NEW.org_id AND m.id IN (NEW.source_id, NEW.target_id) FOR KEY SHARE;
    NEW.counted := {ENDS_KEPT_0053.format(r="NEW")};
    RETURN NEW;
END $$;
"""


class Migration(migrations.Migration):
    dependencies = [("memories", "0054_namespace_labels")]

    operations = [
        migrations.RunSQL(COUNTED, COUNTED_0053),
        migrations.RunSQL(ENDS_CHANGED.format(kept=" AND ".join(END_KEPT.format(end=end)
                                                                 for end in ("source_id", "target_id"))),
                          ENDS_CHANGED.format(kept=ENDS_KEPT_0053.format(r="r"))),
    ]
