"""The retrieval events are found by a text of their query through an index (the console's events
page, memories.use_cases.retrieval.retrieval_event_list; docs/adr/0056), instead of by testing
every event of the organisation.

The test was `query ILIKE '%text%'`: not leakproof, so under row-level security never an index
condition, and a text no event holds read them all (200 ms at 100k memories, 12,500 events;
benchmarks/scale/README.md). As the entities' names (migration 0045): each event keeps its
query's tails, the folded query from the start of each word (a letter or digit after anything
else), each cut at TAIL_CHARS and tagged with the first 8 hex digits of the organisation's id,
in a tsvector with a GIN index (tsvector @@ tsquery is leakproof). A text that starts a word of
the query is a prefix of one of its tails.

Nothing here holds the table for long, however many events there are (an event is written by
every search, so this table outgrows the memories):
- the column is added without a default (a change of the catalogue, no rewrite);
- a BEFORE INSERT OR UPDATE trigger keeps it from the query on every write;
- the events there are filled a batch at a time, each organisation's in order of its key, each
  batch its own short transaction (the append-only trigger now lets query_tails change: it is
  derived, the trigger above sets it from the query whatever an UPDATE says);
- the index is built CONCURRENTLY.
Like the entities' tails the column is not in the Django model: nothing reads it back.
"""

from django.db import migrations, transaction

TAIL_CHARS = 60
BATCH = 5_000

FUNCTIONS = rf"""
CREATE FUNCTION event_query_tails(org uuid, query text) RETURNS tsvector
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $$
    SELECT array_to_tsvector(ARRAY(
        SELECT DISTINCT left(org::text, 8) || left(substr(folded, place), {TAIL_CHARS})
        FROM lower(query) AS folded, generate_series(1, length(folded)) AS place
        WHERE substr(folded, place, 1) ~ '[[:alnum:]]'
          AND (place = 1 OR substr(folded, place - 1, 1) !~ '[[:alnum:]]')))
$$;
CREATE FUNCTION event_query_tails_kept() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.query_tails := event_query_tails(NEW.org_id, NEW.query);
    RETURN NEW;
END $$;
"""
DROP_FUNCTIONS = """
DROP FUNCTION event_query_tails_kept();
DROP FUNCTION event_query_tails(uuid, text);
"""
# The append-only trigger (memories 0002) with query_tails among the columns an UPDATE may change.
APPEND_ONLY = """
DROP TRIGGER retrieval_events_append_only ON retrieval_events;
CREATE TRIGGER retrieval_events_append_only BEFORE UPDATE ON retrieval_events
    FOR EACH ROW EXECUTE FUNCTION forbid_rewrite({});
"""


def fill(apps, schema_editor):
    """Every event's tails, an organisation at a time, BATCH events a transaction."""
    connection = schema_editor.connection

    def as_service_account(cursor):
        # Row-level security is forced on the owner too; SET LOCAL reaches a Citus cluster's workers.
        cursor.execute("SET LOCAL app.service_account = 'on'")

    with transaction.atomic(using=connection.alias), connection.cursor() as cursor:
        as_service_account(cursor)
        cursor.execute("SELECT id FROM organizations ORDER BY id")
        organisations = [org_id for (org_id,) in cursor.fetchall()]
    for org_id in organisations:
        last = None
        while True:
            with transaction.atomic(using=connection.alias), connection.cursor() as cursor:
                as_service_account(cursor)
                cursor.execute(
                    "UPDATE retrieval_events SET query_tails = event_query_tails(org_id, query) "
                    "WHERE org_id = %s AND id IN (SELECT id FROM retrieval_events WHERE org_id = %s "
                    "  AND (%s::uuid IS NULL OR id > %s::uuid) ORDER BY id LIMIT %s) RETURNING id",
                    [org_id, org_id, last, last, BATCH])
                done = [row[0] for row in cursor.fetchall()]
            if len(done) < BATCH:
                break
            last = max(done)


class Migration(migrations.Migration):
    atomic = False  # each batch its own transaction; CREATE INDEX CONCURRENTLY cannot run in one

    dependencies = [("memories", "0046_memories_namespace_event_time")]

    operations = [
        migrations.RunSQL("ALTER TABLE retrieval_events ADD COLUMN query_tails tsvector",
                          "ALTER TABLE retrieval_events DROP COLUMN query_tails"),
        migrations.RunSQL(FUNCTIONS, DROP_FUNCTIONS),
        migrations.RunSQL(
            "CREATE TRIGGER retrieval_events_query_tails BEFORE INSERT OR UPDATE ON retrieval_events "
            "FOR EACH ROW EXECUTE FUNCTION event_query_tails_kept()",
            "DROP TRIGGER retrieval_events_query_tails ON retrieval_events"),
        migrations.RunSQL(APPEND_ONLY.format("'agent_id', 'user_id', 'replay_of', 'query_tails'"),
                          APPEND_ONLY.format("'agent_id', 'user_id', 'replay_of'")),
        migrations.RunPython(fill, migrations.RunPython.noop),
        migrations.RunSQL(
            "CREATE INDEX CONCURRENTLY IF NOT EXISTS retrieval_events_query_tails ON retrieval_events "
            "USING gin (query_tails) WITH (fastupdate = off)",
            "DROP INDEX CONCURRENTLY IF EXISTS retrieval_events_query_tails"),
    ]
