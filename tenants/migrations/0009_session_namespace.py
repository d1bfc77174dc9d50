"""A session's `scope` is called namespace in code (issue 30), kept on its column `scope`:
only Django's state changes, the database not at all."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('tenants', '0008_sessions_consolidation'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.RenameField(model_name="session", old_name="scope", new_name="namespace"),
                migrations.AlterField(
                    model_name="session", name="namespace",
                    field=models.CharField(blank=True, db_column="scope", default="", max_length=256),
                ),
            ],
        ),
    ]
