"""Two shapes a Citus cluster refuses, changed so both engines run one schema (docs/adr/0042).

1. The links between memories and artifacts no longer cascade a namespace change: Citus
refuses ON UPDATE CASCADE on a key that holds the distribution column. Nothing relied on it:
a link's namespace must be both its memory's and its artifact's, so a cascade from one side
was always refused by the other side's key; now the first key refuses it.

2. The lexical statistics' deltas are appended by row triggers, not statement triggers with
transition tables, and TRUNCATE no longer empties them by trigger.

On a Citus cluster a trigger on memories fires on the worker holding the shard, and a
statement trigger there cannot read its transition table ("could not find named tuplestore").
A row trigger can, and its INSERT into memory_lexeme_deltas (colocated, the same
organisation's shard group) runs on the same node in the same transaction (docs/adr/0042).
The counts are the same: a tsvector holds each lexeme once, so a live row adds docs 1 and
tokens = its positions for each lexeme, and docs 1 and its total under ''. A batch of N
memories now appends with N statements instead of one.

The TRUNCATE trigger is gone for the same reason (a shard's trigger cannot truncate another
distributed table); `manage.py flush`, the one thing that truncates memories, empties both
statistics tables itself.
"""

import importlib

from django.db import migrations

lexeme_statistics = importlib.import_module("memories.migrations.0018_lexeme_statistics")
LIVE_OLD, LIVE_NEW = lexeme_statistics.LIVE_OLD, lexeme_statistics.LIVE_NEW

# One live row's lexemes, counted with `sign`, and its total under ''.
COUNTED = """
    INSERT INTO memory_lexeme_deltas (org_id, lexeme, docs, tokens)
    SELECT {row}.org_id, u.lexeme, {sign}1, {sign}cardinality(u.positions) FROM unnest({row}.search_vector) u
    UNION ALL
    SELECT {row}.org_id, '', {sign}1, {sign}sum(cardinality(u.positions)) FROM unnest({row}.search_vector) u
    HAVING count(*) > 0;
"""

PER_ROW = f"""
DROP TRIGGER memory_lexemes_truncated ON memories;
DROP TRIGGER memory_lexemes_deleted ON memories;
DROP TRIGGER memory_lexemes_inserted ON memories;
DROP FUNCTION memory_lexemes_truncated();
DROP FUNCTION memory_lexemes_deleted();
DROP FUNCTION memory_lexemes_inserted();

CREATE FUNCTION memory_lexemes_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    {COUNTED.format(row="NEW", sign="")}
    RETURN NULL;
END $$;

CREATE FUNCTION memory_lexemes_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    {COUNTED.format(row="OLD", sign="-")}
    RETURN NULL;
END $$;

CREATE TRIGGER memory_lexemes_inserted AFTER INSERT ON memories FOR EACH ROW
    WHEN {LIVE_NEW} EXECUTE FUNCTION memory_lexemes_inserted();
CREATE TRIGGER memory_lexemes_deleted AFTER DELETE ON memories FOR EACH ROW
    WHEN {LIVE_OLD} EXECUTE FUNCTION memory_lexemes_deleted();
"""

# Back: every lexeme trigger as migration 0018 made them.
PER_STATEMENT = """
DROP TRIGGER memory_lexemes_updated ON memories;
DROP TRIGGER memory_lexemes_deleted ON memories;
DROP TRIGGER memory_lexemes_inserted ON memories;
DROP FUNCTION memory_lexemes_updated();
DROP FUNCTION memory_lexemes_deleted();
DROP FUNCTION memory_lexemes_inserted();
""" + lexeme_statistics.FUNCTIONS


ARTIFACT_LINKS = (("memory_id", "memories"), ("artifact_id", "artifacts"))


def links_without_cascade(column: str, parent: str, *, on_update: str = "NO ACTION") -> str:
    name = f"memory_artifacts_{column}_scope_fkey"
    return f"""
        ALTER TABLE memory_artifacts DROP CONSTRAINT {name};
        ALTER TABLE memory_artifacts ADD CONSTRAINT {name} FOREIGN KEY (org_id, {column}, scope)
            REFERENCES {parent} (org_id, id, scope) ON DELETE CASCADE ON UPDATE {on_update};
    """


class Migration(migrations.Migration):
    dependencies = [("memories", "0030_tenant_references_no_action")]

    operations = [
        *(migrations.RunSQL(links_without_cascade(*link), links_without_cascade(*link, on_update="CASCADE"))
          for link in ARTIFACT_LINKS),
        migrations.RunSQL(PER_ROW, PER_STATEMENT),
    ]
