"""The switch of embedding model in batches (issue 32 item 3; memories.lifecycle.reembed,
docs/adr/0050): a model whose vectors are moving into memories.embedding is `switching`, which
tells searches to compare with the active model's vectors wherever they are until the flip.
embedding_models is the deployment's (a reference table on a Citus cluster): the constraint
changes on every node alike."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('memories', '0041_reads_by_index'),
    ]

    operations = [
        migrations.RemoveConstraint(
            model_name='embeddingmodel',
            name='embedding_models_state_valid',
        ),
        migrations.AlterField(
            model_name='embeddingmodel',
            name='state',
            field=models.CharField(choices=[('building', 'Building'), ('ready', 'Ready'), ('switching', 'Switching'), ('active', 'Active'), ('retired', 'Retired')], max_length=16),
        ),
        migrations.AddConstraint(
            model_name='embeddingmodel',
            constraint=models.CheckConstraint(condition=models.Q(('state__in', ['building', 'ready', 'switching', 'active', 'retired'])), name='embedding_models_state_valid'),
        ),
    ]
