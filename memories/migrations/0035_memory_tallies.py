"""Each organisation's memories counted as they change, so the stats and the dashboard read
counts instead of counting (docs/adr/0045).

memory_tallies holds, per (organisation, agent, status, category, memory type), how many
memories not deleted there are (n) and, of them, how many expire (expiring), wait for their
embedding (embedding_pending: none yet and meant to be found by meaning, as
memories.models.EMBEDDING_PENDING) and never decay (not_decaying: decay_rate 0).

Writes never update a tally: a row trigger on memories appends what each row's write changed
to memory_tally_deltas (the old row counted out, the new one in), and a job
(memories.lifecycle.tallies.fold, every 30 s) moves the deltas into memory_tallies. A reader
adds both, so its counts are exactly those of the rows its snapshot sees, as the word
statistics' (migrations 0018, 0031; docs/adr/0037). Row triggers, not statement triggers: on a
Citus cluster a statement trigger on a shard cannot read its transition table, and the deltas
are colocated with memories (both distributed by org_id), so a row trigger's INSERT runs on
the same node in the same transaction (docs/adr/0042).

The update trigger fires only when a counted attribute changes: deletion (deleted_at), the
agent, status, category, type, whether the memory expires, waits for an embedding or decays.
Retrieval counts, feedback, edits of the content and the embedding's replacement append nothing.

memory_strength_bands holds each organisation's strength bands as last counted
(memories.lifecycle.decay.count_bands, every 10 minutes and after the nightly decay) and the
ids of its weakest memories then: strength is a function of time, so no write can keep it.

Kept without a foreign key to organizations (as the word statistics): deleting an
organisation deletes its memories, whose trigger appends the deltas that fold its tallies
away. `manage.py flush` empties the three tables. The backfill counts every memory once, while
writes to memories wait for this transaction (the triggers' creation locks the table).
"""

from django.db import migrations

from memory_platform.schema import as_service_account, enable_tenant_rls

TABLES = """
CREATE TABLE memory_tallies (
    org_id uuid NOT NULL,
    agent_id uuid NOT NULL,
    status varchar(20) NOT NULL,
    category varchar(20) NOT NULL,
    memory_type varchar(20) NOT NULL,
    n bigint NOT NULL,
    expiring bigint NOT NULL,
    embedding_pending bigint NOT NULL,
    not_decaying bigint NOT NULL,
    PRIMARY KEY (org_id, agent_id, status, category, memory_type)
) WITH (fillfactor = 80);
CREATE TABLE memory_tally_deltas (
    org_id uuid NOT NULL,
    id uuid NOT NULL DEFAULT gen_random_uuid(),
    agent_id uuid NOT NULL,
    status varchar(20) NOT NULL,
    category varchar(20) NOT NULL,
    memory_type varchar(20) NOT NULL,
    n integer NOT NULL,
    expiring integer NOT NULL,
    embedding_pending integer NOT NULL,
    not_decaying integer NOT NULL,
    PRIMARY KEY (org_id, id)
);
CREATE TABLE memory_strength_bands (
    org_id uuid NOT NULL PRIMARY KEY,
    strong bigint NOT NULL,
    fading bigint NOT NULL,
    faded bigint NOT NULL,
    weakest uuid[] NOT NULL,
    counted_at timestamptz NOT NULL
);
"""


def counted(row: str, sign: str) -> str:
    """The INSERT of one row's counts (`row`: OLD or NEW) into the deltas, with `sign`."""
    return f"""
        INSERT INTO memory_tally_deltas (org_id, agent_id, status, category, memory_type, n, expiring,
                                         embedding_pending, not_decaying)
        VALUES ({row}.org_id, {row}.agent_id, {row}.status, {row}.category, {row}.memory_type, {sign}1,
                {sign}({row}.expires_at IS NOT NULL)::int, {sign}({row}.embedding IS NULL AND {row}.indexed)::int,
                {sign}({row}.decay_rate = 0)::int);"""


# What a tally counts of a row (`{r}`: OLD or NEW): the update trigger fires when one differs.
ATTRIBUTES = ("{r}.deleted_at IS NULL", "{r}.agent_id", "{r}.status", "{r}.category", "{r}.memory_type",
              "{r}.expires_at IS NULL", "{r}.embedding IS NULL AND {r}.indexed", "{r}.decay_rate = 0")
CHANGED = " OR ".join(f"({a.format(r='OLD')}) IS DISTINCT FROM ({a.format(r='NEW')})" for a in ATTRIBUTES)

FUNCTIONS = f"""
CREATE FUNCTION memory_tallies_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    {counted("NEW", "")}
    RETURN NULL;
END $$;

CREATE FUNCTION memory_tallies_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    {counted("OLD", "-")}
    RETURN NULL;
END $$;

CREATE FUNCTION memory_tallies_updated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF OLD.deleted_at IS NULL THEN
        {counted("OLD", "-")}
    END IF;
    IF NEW.deleted_at IS NULL THEN
        {counted("NEW", "")}
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER memory_tallies_inserted AFTER INSERT ON memories FOR EACH ROW
    WHEN (NEW.deleted_at IS NULL) EXECUTE FUNCTION memory_tallies_inserted();
CREATE TRIGGER memory_tallies_deleted AFTER DELETE ON memories FOR EACH ROW
    WHEN (OLD.deleted_at IS NULL) EXECUTE FUNCTION memory_tallies_deleted();
CREATE TRIGGER memory_tallies_updated AFTER UPDATE ON memories FOR EACH ROW
    WHEN ({CHANGED}) EXECUTE FUNCTION memory_tallies_updated();
"""

DROP_FUNCTIONS = """
DROP TRIGGER memory_tallies_updated ON memories;
DROP TRIGGER memory_tallies_deleted ON memories;
DROP TRIGGER memory_tallies_inserted ON memories;
DROP FUNCTION memory_tallies_updated();
DROP FUNCTION memory_tallies_deleted();
DROP FUNCTION memory_tallies_inserted();
"""

# The same count as memories.lifecycle.tallies.RECOUNT, for every organisation.
BACKFILL = as_service_account("""
INSERT INTO memory_tallies (org_id, agent_id, status, category, memory_type, n, expiring, embedding_pending,
                            not_decaying)
SELECT org_id, agent_id, status, category, memory_type, count(*), count(*) FILTER (WHERE expires_at IS NOT NULL),
       count(*) FILTER (WHERE embedding IS NULL AND indexed), count(*) FILTER (WHERE decay_rate = 0)
FROM memories WHERE deleted_at IS NULL
GROUP BY org_id, agent_id, status, category, memory_type;
""")


class Migration(migrations.Migration):
    dependencies = [("memories", "0034_immutable_rows_name_their_table")]

    operations = [
        migrations.RunSQL(TABLES, "DROP TABLE memory_strength_bands; DROP TABLE memory_tally_deltas; "
                                  "DROP TABLE memory_tallies;"),
        enable_tenant_rls("memory_tallies"),
        enable_tenant_rls("memory_strength_bands"),
        enable_tenant_rls("memory_tally_deltas"),
        migrations.RunSQL(FUNCTIONS, DROP_FUNCTIONS),
        migrations.RunSQL(BACKFILL, migrations.RunSQL.noop),
    ]
