"""Re-embedding without downtime (issue 19, item 5; memories.lifecycle.reembed, docs/adr/0039).

* embedding_models: each embedding model's standing in this deployment (building, ready,
  active, retired), not an organisation's: every role reads it, only the service account
  changes it. The default model, whose vectors memories hold today, is its active row.
* memory_embeddings: a memory's vector by a model that is not the active one (the one being
  built, the one switched from), a tenant table like the others: (org_id, id) key, a
  composite reference to its memory that goes with it, row-level security.
* memories.updated_at no longer moves when only a memory's vector does (the embedding
  worker, a switch of model): the memory did not change.
"""

import uuid

import django.db.models.deletion
import pgvector.django.vector
from django.db import migrations, models

from memory_platform.schema import (
    SERVICE_ACCOUNT_PREDICATE,
    TenantReference,
    as_service_account,
    enable_tenant_rls,
    tenant_foreign_key,
    tenant_keys,
)

EMBEDDING_MODELS_POLICIES = f"""
    ALTER TABLE embedding_models ENABLE ROW LEVEL SECURITY;
    ALTER TABLE embedding_models FORCE ROW LEVEL SECURITY;
    CREATE POLICY embedding_models_read ON embedding_models FOR SELECT USING (true);
    CREATE POLICY embedding_models_service_account ON embedding_models
        USING ({SERVICE_ACCOUNT_PREDICATE}) WITH CHECK ({SERVICE_ACCOUNT_PREDICATE});
"""
DROP_EMBEDDING_MODELS_POLICIES = """
    DROP POLICY embedding_models_service_account ON embedding_models;
    DROP POLICY embedding_models_read ON embedding_models;
    ALTER TABLE embedding_models NO FORCE ROW LEVEL SECURITY;
    ALTER TABLE embedding_models DISABLE ROW LEVEL SECURITY;
"""

THE_DEFAULT_MODEL_IS_ACTIVE = as_service_account("""
    INSERT INTO embedding_models (name, state, memories_total, memories_done, task, job_id, error, activated_at,
                                  replaced, updated_at)
    VALUES ('all-MiniLM-L6-v2', 'active', 0, 0, '', '', '', now(), '', now());
""")

# The columns a new vector for the same content changes (the generated ones are not computed
# yet in a BEFORE trigger's NEW), emptied in copies of both rows before they are compared: a
# comparison of the rows as jsonb cost 186 µs a row of a switch (their vectors as text), this 37.
VECTOR_COLUMNS = ("embedding", "embedding_model", "embedding_dimensions", "embedded_at", "updated_at",
                  "search_vector", "tenant_lexemes")
EMPTIED = "\n".join(f"            before.{column} := NULL; after.{column} := NULL;" for column in VECTOR_COLUMNS)
VECTORS_ALONE_ARE_NO_CHANGE = f"""
    CREATE FUNCTION set_memory_updated_at() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE
        before memories;
        after memories;
    BEGIN
        -- Compared whole only when the vector changed: every other update pays one comparison.
        IF NEW.embedding IS DISTINCT FROM OLD.embedding THEN
            before := OLD;
            after := NEW;
{EMPTIED}
            IF before IS NOT DISTINCT FROM after THEN
                NEW.updated_at := OLD.updated_at;
                RETURN NEW;
            END IF;
        END IF;
        NEW.updated_at := clock_timestamp();
        RETURN NEW;
    END
    $$;
    DROP TRIGGER memories_updated_at ON memories;
    CREATE TRIGGER memories_updated_at BEFORE UPDATE ON memories
        FOR EACH ROW EXECUTE FUNCTION set_memory_updated_at();
"""
VECTORS_ALONE_ARE_A_CHANGE = """
    DROP TRIGGER memories_updated_at ON memories;
    CREATE TRIGGER memories_updated_at BEFORE UPDATE ON memories FOR EACH ROW EXECUTE FUNCTION set_updated_at();
    DROP FUNCTION set_memory_updated_at();
"""


class Migration(migrations.Migration):

    dependencies = [
        ('memories', '0025_decaying_index'),
        ('tenants', '0008_sessions_consolidation'),
    ]

    operations = [
        migrations.CreateModel(
            name='EmbeddingModel',
            fields=[
                ('name', models.CharField(help_text='Its name in memories.vectors.embeddings.KNOWN_MODELS.', max_length=128, primary_key=True, serialize=False)),
                ('state', models.CharField(choices=[('building', 'Building'), ('ready', 'Ready'), ('active', 'Active'), ('retired', 'Retired')], max_length=16)),
                ('memories_total', models.PositiveIntegerField(default=0, help_text='Memories to embed, when last counted.')),
                ('memories_done', models.PositiveIntegerField(default=0, help_text='Of them, those with a vector of this model.')),
                ('task', models.CharField(blank=True, default='', max_length=16)),
                ('job_id', models.CharField(blank=True, default='', max_length=64)),
                ('error', models.TextField(blank=True, default='', help_text='Why the last build or switch stopped, if it failed.')),
                ('started_at', models.DateTimeField(blank=True, null=True)),
                ('finished_at', models.DateTimeField(blank=True, help_text='When its last build finished.', null=True)),
                ('activated_at', models.DateTimeField(blank=True, null=True)),
                ('retired_at', models.DateTimeField(blank=True, null=True)),
                ('replaced', models.CharField(blank=True, default='', help_text="The model that was active before this one: a rollback's target.", max_length=128)),
                ('updated_at', models.DateTimeField(auto_now=True)),
            ],
            options={
                'db_table': 'embedding_models',
                'ordering': ['name'],
            },
        ),
        migrations.CreateModel(
            name='MemoryEmbedding',
            fields=[
                ('id', models.UUIDField(default=uuid.uuid4, editable=False, primary_key=True, serialize=False)),
                ('model', models.CharField(max_length=128)),
                ('dimensions', models.PositiveSmallIntegerField(default=384)),
                ('embedding', pgvector.django.vector.VectorField(dimensions=384)),
                ('text_hash', models.CharField(help_text='SHA-256 hex of the exact text embedded.', max_length=64)),
                ('embedded_at', models.DateTimeField()),
            ],
            options={
                'db_table': 'memory_embeddings',
            },
        ),
        migrations.AddConstraint(
            model_name='embeddingmodel',
            constraint=models.UniqueConstraint(condition=models.Q(('state', 'active')), fields=('state',), name='embedding_models_one_active'),
        ),
        migrations.AddConstraint(
            model_name='embeddingmodel',
            constraint=models.CheckConstraint(condition=models.Q(('state__in', ['building', 'ready', 'active', 'retired'])), name='embedding_models_state_valid'),
        ),
        migrations.AddConstraint(
            model_name='embeddingmodel',
            constraint=models.CheckConstraint(condition=models.Q(('task__in', ['', 'build', 'activate'])), name='embedding_models_task_valid'),
        ),
        migrations.AddField(
            model_name='memoryembedding',
            name='memory',
            field=models.ForeignKey(db_constraint=False, db_index=False, on_delete=django.db.models.deletion.DO_NOTHING, related_name='+', to='memories.memory'),
        ),
        migrations.AddField(
            model_name='memoryembedding',
            name='org',
            field=models.ForeignKey(db_column='org_id', db_constraint=False, db_index=False, on_delete=django.db.models.deletion.DO_NOTHING, related_name='+', to='tenants.organization'),
        ),
        migrations.AddConstraint(
            model_name='memoryembedding',
            constraint=models.UniqueConstraint(fields=('org', 'model', 'memory'), name='memory_embeddings_unique'),
        ),
        migrations.AddConstraint(
            model_name='memoryembedding',
            constraint=models.CheckConstraint(condition=models.Q(('dimensions', 384)), name='memory_embeddings_dimensions'),
        ),
        migrations.AddConstraint(
            model_name='memoryembedding',
            constraint=models.CheckConstraint(condition=models.Q(('model', ''), _negated=True), name='memory_embeddings_model_named'),
        ),
        migrations.AddConstraint(
            model_name='memoryembedding',
            constraint=models.CheckConstraint(condition=models.Q(('text_hash__regex', '^[0-9a-f]{64}$')), name='memory_embeddings_text_hash_is_sha256'),
        ),
        tenant_keys("memory_embeddings"),
        tenant_foreign_key("memory_embeddings", TenantReference(("memory_id",), "memories")),
        enable_tenant_rls("memory_embeddings"),
        migrations.RunSQL(EMBEDDING_MODELS_POLICIES, DROP_EMBEDDING_MODELS_POLICIES),
        migrations.RunSQL(THE_DEFAULT_MODEL_IS_ACTIVE, migrations.RunSQL.noop),
        migrations.RunSQL(VECTORS_ALONE_ARE_NO_CHANGE, VECTORS_ALONE_ARE_A_CHANGE),
    ]
