"""Each organisation's word statistics, which BM25 ranks by (docs/adr/0037): how many live
memories hold each lexeme (docs) and how often (tokens), and under the lexeme '' (which
to_tsvector never emits) how many live memories hold any word and how many words they hold
in all (N, and the token total avgdl is read from).

Writes never update a statistic: a trigger on memories appends what each statement changed to
memory_lexeme_deltas (one INSERT ... SELECT a statement, no row locks, no waits), and a job
(memories.understanding.lexicon.fold, every 30 s) moves the deltas into memory_lexeme_stats. A reader adds
both, so its statistics are exactly those of the rows its snapshot sees.

Counted: live memories (active, not deleted), the rows a default search ranks. Kept without a
foreign key to organizations: deleting an organisation deletes its memories, whose trigger
appends the negative deltas that fold its statistics away; and the suite's TRUNCATE of every
model table (which it could not run past a foreign key) empties both tables through the
TRUNCATE trigger. Both tables are under the tenant policy: the lexemes are words of the
organisation's memories.

The backfill reads every live memory's tsvector in one statement (~15M lexeme rows at 1M
memories) while writes to memories wait: plan it as maintenance on a large table.
"""

from django.db import migrations

from memory_platform.schema import as_service_account, enable_tenant_rls

TABLES = """
CREATE TABLE memory_lexeme_stats (
    org_id uuid NOT NULL,
    lexeme text NOT NULL,
    docs bigint NOT NULL,
    tokens bigint NOT NULL,
    PRIMARY KEY (org_id, lexeme)
) WITH (fillfactor = 80);
CREATE TABLE memory_lexeme_deltas (
    org_id uuid NOT NULL,
    lexeme text NOT NULL,
    docs integer NOT NULL,
    tokens integer NOT NULL
);
CREATE INDEX memory_lexeme_deltas_key ON memory_lexeme_deltas (org_id, lexeme);
"""

# The rows of a statement's transition table that were live, per (organisation, lexeme) and
# per organisation (''), counted with `sign`.
COUNTED = """
    INSERT INTO memory_lexeme_deltas (org_id, lexeme, docs, tokens)
    SELECT r.org_id, coalesce(u.lexeme, ''), {sign} count(DISTINCT r.id), {sign} sum(cardinality(u.positions))
    FROM {rows} r CROSS JOIN LATERAL unnest(r.search_vector) u
    WHERE r.status = 'active' AND r.deleted_at IS NULL
    GROUP BY GROUPING SETS ((r.org_id, u.lexeme), (r.org_id));
"""

LIVE_OLD = "(OLD.status = 'active' AND OLD.deleted_at IS NULL)"
LIVE_NEW = "(NEW.status = 'active' AND NEW.deleted_at IS NULL)"

FUNCTIONS = f"""
CREATE FUNCTION memory_lexemes_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    {COUNTED.format(sign="", rows="new_rows")}
    RETURN NULL;
END $$;

CREATE FUNCTION memory_lexemes_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    {COUNTED.format(sign="-", rows="old_rows")}
    RETURN NULL;
END $$;

-- One row changed: its old lexemes counted out and its new ones in, netted (an edit that keeps
-- a word appends nothing for it). In the '' row, sum(DISTINCT sign) is +1 or -1 when only one
-- side is live and holds a word, 0 when both do.
CREATE FUNCTION memory_lexemes_updated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    WITH counted AS (
        SELECT u.lexeme, r.sign, r.sign * cardinality(u.positions) AS tokens
        FROM (VALUES (OLD.search_vector, -1, {LIVE_OLD}), (NEW.search_vector, 1, {LIVE_NEW})) r(v, sign, live)
        CROSS JOIN LATERAL unnest(r.v) u
        WHERE r.live
    )
    INSERT INTO memory_lexeme_deltas (org_id, lexeme, docs, tokens)
    SELECT NEW.org_id, lexeme, sum(sign), sum(tokens) FROM counted
    GROUP BY lexeme HAVING sum(sign) <> 0 OR sum(tokens) <> 0
    UNION ALL
    SELECT NEW.org_id, '', sum(DISTINCT sign), sum(tokens) FROM counted
    HAVING count(*) > 0 AND (sum(DISTINCT sign) <> 0 OR sum(tokens) <> 0);
    RETURN NULL;
END $$;

CREATE FUNCTION memory_lexemes_truncated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    TRUNCATE memory_lexeme_stats, memory_lexeme_deltas;
    RETURN NULL;
END $$;

CREATE TRIGGER memory_lexemes_inserted AFTER INSERT ON memories
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION memory_lexemes_inserted();
CREATE TRIGGER memory_lexemes_deleted AFTER DELETE ON memories
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION memory_lexemes_deleted();
-- Only when the words or the liveness change: the worker's embedding UPDATE and the usage
-- and feedback writes never call it.
CREATE TRIGGER memory_lexemes_updated AFTER UPDATE ON memories FOR EACH ROW
    WHEN (OLD.search_vector IS DISTINCT FROM NEW.search_vector OR {LIVE_OLD} IS DISTINCT FROM {LIVE_NEW})
    EXECUTE FUNCTION memory_lexemes_updated();
CREATE TRIGGER memory_lexemes_truncated AFTER TRUNCATE ON memories
    FOR EACH STATEMENT EXECUTE FUNCTION memory_lexemes_truncated();
"""

DROP_FUNCTIONS = """
DROP TRIGGER memory_lexemes_truncated ON memories;
DROP TRIGGER memory_lexemes_updated ON memories;
DROP TRIGGER memory_lexemes_deleted ON memories;
DROP TRIGGER memory_lexemes_inserted ON memories;
DROP FUNCTION memory_lexemes_truncated();
DROP FUNCTION memory_lexemes_updated();
DROP FUNCTION memory_lexemes_deleted();
DROP FUNCTION memory_lexemes_inserted();
"""

# The same count as memories.understanding.lexicon.RECOUNT, for every organisation (memories is locked
# against writes by the trigger's creation until this transaction commits).
BACKFILL = as_service_account("""
INSERT INTO memory_lexeme_stats (org_id, lexeme, docs, tokens)
SELECT m.org_id, coalesce(u.lexeme, ''), count(DISTINCT m.id), sum(cardinality(u.positions))
FROM memories m CROSS JOIN LATERAL unnest(m.search_vector) u
WHERE m.status = 'active' AND m.deleted_at IS NULL
GROUP BY GROUPING SETS ((m.org_id, u.lexeme), (m.org_id));
""")


class Migration(migrations.Migration):
    dependencies = [("memories", "0017_memories_namespace_order")]

    operations = [
        migrations.RunSQL(TABLES, "DROP TABLE memory_lexeme_deltas; DROP TABLE memory_lexeme_stats;"),
        enable_tenant_rls("memory_lexeme_stats"),
        enable_tenant_rls("memory_lexeme_deltas"),
        migrations.RunSQL(FUNCTIONS, DROP_FUNCTIONS),
        migrations.RunSQL(BACKFILL, migrations.RunSQL.noop),
    ]
