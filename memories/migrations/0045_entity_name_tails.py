"""An entity is found by the start of any word of its name or of an alias (memories.reads.selectors.
entity_list, docs/adr/0053) through an index, instead of by testing every entity of the
organisation.

The test was `key LIKE 'smi%' OR key LIKE '% smi%'`, on the entities and on their aliases. LIKE is
not leakproof, so under row-level security it is never an index condition: the list walked the
organisation's entities, the most mentioned first, until it had a page of matches, which for a
rare text is all of them. pg_trgm is not in the embedded PostgreSQL, and its operators are not
leakproof either.

Each entity now keeps its key's tails: the key from the start of each of its words ("john
smith": "john smith", "smith"), each tagged with the first 8 hex digits of the organisation's id,
as the memories' tenant_lexemes (migration 0013: no btree_gin, and tsvector @@ tsquery is
leakproof, so a GIN index serves it under row-level security). A text matches the start of a word
of the key exactly when it is a prefix of one of its tails, which a prefix query
('3f2a9c1esmi':*) finds in the index. A tail is the key from position 1 and after every space,
so the match is the old LIKE's whatever the key's spaces.

name_tails, the name's, is a generated column. alias_tails, those of all the entity's aliases,
is kept by row triggers on entity_aliases (as memory_tallies' deltas, migration 0035: on a Citus
cluster the aliases and their entity are colocated, both distributed by org_id). Both on the
entity's row, so one condition, `name_tails @@ q OR alias_tails @@ q`, lets the planner choose
between the two GIN indexes (a rare text) and the walk of the most mentioned (a common one).

Like tenant_lexemes the columns are not in the Django model: nothing reads them back.
"""

from django.db import migrations

FUNCTIONS = """
CREATE FUNCTION entity_name_tails(org uuid, key text) RETURNS tsvector
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $$
    SELECT array_to_tsvector(ARRAY(
        SELECT left(org::text, 8) || substr(key, place)
        FROM generate_series(1, length(key)) AS place
        WHERE place = 1 OR substr(key, place - 1, 1) = ' '))
$$;
CREATE FUNCTION entity_alias_tails(org uuid, entity uuid) RETURNS tsvector
LANGUAGE sql STABLE STRICT PARALLEL SAFE
AS $$
    SELECT array_to_tsvector(ARRAY(
        SELECT DISTINCT tail
        FROM entity_aliases, unnest(tsvector_to_array(entity_name_tails(org_id, key))) AS tail
        WHERE org_id = org AND entity_id = entity))
$$;
CREATE FUNCTION entity_alias_tails_kept() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP <> 'INSERT' THEN
        UPDATE entities SET alias_tails = entity_alias_tails(OLD.org_id, OLD.entity_id)
        WHERE org_id = OLD.org_id AND id = OLD.entity_id;
    END IF;
    IF TG_OP <> 'DELETE' THEN
        UPDATE entities SET alias_tails = entity_alias_tails(NEW.org_id, NEW.entity_id)
        WHERE org_id = NEW.org_id AND id = NEW.entity_id;
    END IF;
    RETURN NULL;
END $$;
"""
DROP_FUNCTIONS = """
DROP FUNCTION entity_alias_tails_kept();
DROP FUNCTION entity_alias_tails(uuid, uuid);
DROP FUNCTION entity_name_tails(uuid, text);
"""
TRIGGERS = """
CREATE TRIGGER entity_alias_tails_inserted AFTER INSERT ON entity_aliases FOR EACH ROW
    EXECUTE FUNCTION entity_alias_tails_kept();
CREATE TRIGGER entity_alias_tails_deleted AFTER DELETE ON entity_aliases FOR EACH ROW
    EXECUTE FUNCTION entity_alias_tails_kept();
CREATE TRIGGER entity_alias_tails_updated AFTER UPDATE ON entity_aliases FOR EACH ROW
    WHEN (OLD.key IS DISTINCT FROM NEW.key OR OLD.entity_id IS DISTINCT FROM NEW.entity_id)
    EXECUTE FUNCTION entity_alias_tails_kept();
"""
DROP_TRIGGERS = """
DROP TRIGGER entity_alias_tails_updated ON entity_aliases;
DROP TRIGGER entity_alias_tails_deleted ON entity_aliases;
DROP TRIGGER entity_alias_tails_inserted ON entity_aliases;
"""


class Migration(migrations.Migration):
    dependencies = [("memories", "0043_erasure_reads_by_index")]

    operations = [
        migrations.RunSQL(FUNCTIONS, DROP_FUNCTIONS),
        migrations.RunSQL(
            "ALTER TABLE entities ADD COLUMN name_tails tsvector "
            "GENERATED ALWAYS AS (entity_name_tails(org_id, key)) STORED, ADD COLUMN alias_tails tsvector",
            "ALTER TABLE entities DROP COLUMN name_tails, DROP COLUMN alias_tails",
        ),
        # The aliases there are (written while the triggers' creation waits for this transaction).
        migrations.RunSQL(TRIGGERS, DROP_TRIGGERS),
        migrations.RunSQL(
            "UPDATE entities SET alias_tails = entity_alias_tails(org_id, id) "
            "WHERE id IN (SELECT entity_id FROM entity_aliases)",
            migrations.RunSQL.noop,
        ),
        migrations.RunSQL(
            "CREATE INDEX entities_name_tails ON entities USING gin (name_tails) WITH (fastupdate = off)",
            "DROP INDEX entities_name_tails",
        ),
        migrations.RunSQL(
            "CREATE INDEX entities_alias_tails ON entities USING gin (alias_tails) WITH (fastupdate = off)",
            "DROP INDEX entities_alias_tails",
        ),
    ]
