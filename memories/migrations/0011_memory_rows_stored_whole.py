"""A memory row keeps its text and its tsvector in the row (toast_tuple_target 4096).

PostgreSQL moves a row's long values out of line once the row passes toast_tuple_target,
2 kB by default. The vector alone fills 1.5 kB of a memory's row and cannot move (migration
0006 keeps it in the row), so the text and the tsvector of nearly every memory went to the
TOAST table, even a sentence of 90 characters: each read of either cost an index lookup and
another page. At 1M memories, reading the search_vector of a 1,000-row tenant's rows took 9.1
ms, 2.3 with the rows whole; matching and ranking them, 13.3 against 5.0 (docs/adr/0035).
With the target at 4096 a row stays whole up to about 2 kB of text and tsvector; longer ones
are compressed and moved out as before.

The setting applies to rows as they are written: existing rows move back into the row when
they are next updated, or all at once when the table is rewritten (VACUUM FULL memories,
which locks the table; do it in a maintenance window).
"""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("memories", "0010_tenant_settings_read_once"),
    ]

    operations = [
        migrations.RunSQL(
            "ALTER TABLE memories SET (toast_tuple_target = 4096)",
            reverse_sql="ALTER TABLE memories RESET (toast_tuple_target)",
        ),
    ]
