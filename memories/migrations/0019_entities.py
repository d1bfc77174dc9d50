"""Entities (spec §4): who and what memories speak of, their aliases, and which memories
mention them; tenant tables like the others (composite keys and references, row-level
security)."""

import uuid

import django.db.models.deletion
import django.db.models.functions.datetime
from django.db import migrations, models

from memory_platform.schema import (
    TenantReference,
    enable_tenant_rls,
    tenant_foreign_key,
    tenant_keys,
)

TABLES = ("entities", "entity_aliases", "memory_entities")


class Migration(migrations.Migration):

    dependencies = [
        ('memories', '0018_lexeme_statistics'),
        ('tenants', '0007_api_keys_limited_to_namespaces_or_reads'),
    ]

    operations = [
        migrations.CreateModel(
            name='Entity',
            fields=[
                ('id', models.UUIDField(default=uuid.uuid4, editable=False, primary_key=True, serialize=False)),
                ('scope', models.CharField(blank=True, default='', max_length=256)),
                ('kind', models.CharField(choices=[('person', 'Person'), ('place', 'Place'), ('organization', 'Organization'), ('date', 'Date'), ('quantity', 'Quantity'), ('project', 'Project'), ('concept', 'Concept'), ('tool', 'Tool')], max_length=16)),
                ('name', models.CharField(max_length=256)),
                ('key', models.CharField(help_text='The name folded for matching (memories.understanding.entities.name_key).', max_length=256)),
                ('summary', models.TextField(blank=True, default='')),
                ('attributes', models.JSONField(blank=True, default=dict)),
                ('mention_count', models.PositiveIntegerField(default=0)),
                ('first_seen_at', models.DateTimeField(auto_now_add=True, db_default=django.db.models.functions.datetime.Now())),
                ('last_seen_at', models.DateTimeField(auto_now_add=True, db_default=django.db.models.functions.datetime.Now())),
                ('org', models.ForeignKey(db_column='org_id', db_constraint=False, db_index=False, on_delete=django.db.models.deletion.DO_NOTHING, related_name='+', to='tenants.organization')),
            ],
            options={
                'db_table': 'entities',
            },
        ),
        migrations.CreateModel(
            name='EntityAlias',
            fields=[
                ('id', models.UUIDField(default=uuid.uuid4, editable=False, primary_key=True, serialize=False)),
                ('alias', models.CharField(max_length=256)),
                ('key', models.CharField(max_length=256)),
                ('created_at', models.DateTimeField(auto_now_add=True, db_default=django.db.models.functions.datetime.Now())),
                ('entity', models.ForeignKey(db_constraint=False, db_index=False, on_delete=django.db.models.deletion.DO_NOTHING, related_name='aliases', to='memories.entity')),
                ('org', models.ForeignKey(db_column='org_id', db_constraint=False, db_index=False, on_delete=django.db.models.deletion.DO_NOTHING, related_name='+', to='tenants.organization')),
            ],
            options={
                'db_table': 'entity_aliases',
            },
        ),
        migrations.CreateModel(
            name='MemoryEntity',
            fields=[
                ('id', models.UUIDField(default=uuid.uuid4, editable=False, primary_key=True, serialize=False)),
                ('mention', models.CharField(max_length=256)),
                ('source', models.CharField(choices=[('agent', 'Agent'), ('extractor', 'Extractor')], default='extractor', max_length=16)),
                ('created_at', models.DateTimeField(auto_now_add=True, db_default=django.db.models.functions.datetime.Now())),
                ('entity', models.ForeignKey(db_constraint=False, db_index=False, on_delete=django.db.models.deletion.DO_NOTHING, related_name='memory_links', to='memories.entity')),
                ('memory', models.ForeignKey(db_constraint=False, db_index=False, on_delete=django.db.models.deletion.DO_NOTHING, related_name='entity_links', to='memories.memory')),
                ('org', models.ForeignKey(db_column='org_id', db_constraint=False, db_index=False, on_delete=django.db.models.deletion.DO_NOTHING, related_name='+', to='tenants.organization')),
            ],
            options={
                'db_table': 'memory_entities',
            },
        ),
        migrations.AddIndex(
            model_name='entity',
            index=models.Index(fields=['org', 'scope', '-mention_count'], name='entities_scope_mentions'),
        ),
        migrations.AddConstraint(
            model_name='entity',
            constraint=models.UniqueConstraint(fields=('org', 'scope', 'kind', 'key'), name='entities_unique_name'),
        ),
        migrations.AddConstraint(
            model_name='entity',
            constraint=models.CheckConstraint(condition=models.Q(('kind__in', ['person', 'place', 'organization', 'date', 'quantity', 'project', 'concept', 'tool'])), name='entities_kind_valid'),
        ),
        migrations.AddIndex(
            model_name='entityalias',
            index=models.Index(fields=['org', 'key'], name='entity_aliases_key'),
        ),
        migrations.AddConstraint(
            model_name='entityalias',
            constraint=models.UniqueConstraint(fields=('org', 'entity', 'key'), name='entity_aliases_unique'),
        ),
        migrations.AddConstraint(
            model_name='memoryentity',
            constraint=models.UniqueConstraint(fields=('org', 'memory', 'entity'), name='memory_entities_unique'),
        ),
        *(tenant_keys(table) for table in TABLES),
        tenant_foreign_key("entity_aliases", TenantReference(("entity_id",), "entities")),
        tenant_foreign_key("memory_entities", TenantReference(("memory_id",), "memories")),
        tenant_foreign_key("memory_entities", TenantReference(("entity_id",), "entities")),
        *(enable_tenant_rls(table) for table in TABLES),
    ]
