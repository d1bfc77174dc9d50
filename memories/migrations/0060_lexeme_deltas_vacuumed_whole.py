"""memory_lexeme_deltas is a queue: the memories' triggers append to it and every fold deletes
all of it, so nearly every row it ever holds is dead within 30 s. Two storage parameters keep
the reads of it as short as the rows it holds:

- vacuum_index_cleanup = on: VACUUM skips cleaning a table's indexes when under 2% of its pages
  hold dead rows (PostgreSQL's "index scan bypassed"). After a bulk write grew the table (1M
  memories loaded: 866 MB, 105,686 pages), each later fold leaves its dead rows on a few pages,
  below that mark, and their index entries stayed: 110,837 of them, 55,751 of one organisation,
  which every search's statistics read (lexicon.CURRENT) walked by a bitmap scan of the primary
  key's (org_id) range, that cannot mark them dead: 51 ms of a search at p50 instead of 0.6.
- autovacuum after 1,000 dead rows whatever the table's size (scale factor 0): soon after each
  fold of a busy minute, not after a fifth of a table that is nearly always empty.

Citus propagates both to the shards. Reversed by resetting them."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("memories", "0059_vector_model_index_with_deleted")]

    operations = [
        migrations.RunSQL(
            "ALTER TABLE memory_lexeme_deltas SET (vacuum_index_cleanup = on, "
            "autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 1000)",
            "ALTER TABLE memory_lexeme_deltas RESET (vacuum_index_cleanup, "
            "autovacuum_vacuum_scale_factor, autovacuum_vacuum_threshold)",
        ),
    ]
