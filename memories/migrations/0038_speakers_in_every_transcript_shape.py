"""Who said the memories written before issue 34 in a transcript shape other than "Name: ..."
(migration 0020 read that one): a person linked to a memory that has no speaker, whose name
opens the text in one of the shapes memories.understanding.entities.SPEAKER reads ("Name said:
...", "[Name] ...", "<Name> ...", "**Name**: ...", "Name (10:32): ...", "[10:32] Name: ...",
"Name - ...", "> Name wrote: ...", "> Name: ..."), is its speaker. The link already exists (the extractor
linked the name as mentioned), so only its role changes. The same shapes, in PostgreSQL's
regular expressions; a memory whose text shows no speaker keeps none."""

from django.db import migrations

from memory_platform.schema import as_service_account

VERBS = ("said|says|wrote|writes|asked|asks|replied|replies|answered|answers|added|adds|explained|explains|"
         "responded|responds|told|tells|shared|shares|mentioned|mentions|texted|texts|posted|posts")
# The name, escaped for a regular expression, as in migration 0020.
NAME = r"regexp_replace(me.mention, '([^\w\s])', '\\\1', 'g')"
PREFIX = r"'^\s*(>\s*)*(\[[0-9:/.,\sAaPpMmTZ-]{4,40}\]\s*|[0-9]{1,2}:[0-9]{2}(:[0-9]{2})?(\s?[AaPp]\.?[Mm]\.?)?\s*[-–—|]?\s*)?'"
SHAPES = (
    rf"'(\*\*' || {NAME} || '\*\*\s*:|\*\*' || {NAME} || ':\*\*|\[' || {NAME} || '\]|<' || {NAME} || '>"
    rf"|' || {NAME} || '\s*\([^()\n]{{1,40}}\)\s*:|' || {NAME} || '\s+({VERBS})\y"
    rf"|' || {NAME} || '\s+[-–—]\s|' || {NAME} || '\s*:(?!//))'"
)
BACKFILL = as_service_account(f"""
UPDATE memory_entities me SET role = 'speaker'
FROM memories m, entities e
WHERE m.org_id = me.org_id AND m.id = me.memory_id AND e.org_id = me.org_id AND e.id = me.entity_id
  AND e.kind = 'person' AND me.role = 'mentioned'
  AND NOT EXISTS (SELECT 1 FROM memory_entities s
                  WHERE s.org_id = me.org_id AND s.memory_id = me.memory_id AND s.role = 'speaker')
  AND m.content ~ ({PREFIX} || {SHAPES});
""")


class Migration(migrations.Migration):

    dependencies = [
        ('memories', '0037_memory_day_tallies'),
    ]

    operations = [
        migrations.RunSQL(BACKFILL, migrations.RunSQL.noop),
    ]
