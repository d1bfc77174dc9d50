"""Keep each vector in its row.

pgvector's type asks for EXTERNAL storage, so a row with a 1.5 KB vector plus its text goes
over the 2 KB TOAST threshold and the vector moves out of line: every read of it (an exact
scan, the similarity in a search's select list) becomes a second index lookup. PLAIN keeps it
in the heap tuple. Rows written before this migration keep their out-of-line vectors until
they are rewritten (VACUUM FULL, or the next update of the vector).
"""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("memories", "0005_dedup_applies_to_unkeyed_memories")]

    operations = [
        migrations.RunSQL(
            "ALTER TABLE memories ALTER COLUMN embedding SET STORAGE PLAIN",
            "ALTER TABLE memories ALTER COLUMN embedding SET STORAGE EXTERNAL",
        ),
    ]
