"""Erasures: the record of each hard delete (memories.lifecycle.erasure), a tenant table like
the others (composite keys and references, row-level security)."""

import uuid

import django.db.models.deletion
import django.db.models.functions.datetime
from django.conf import settings
from django.db import migrations, models

from memory_platform.schema import (
    TenantReference,
    enable_tenant_rls,
    tenant_foreign_key,
    tenant_keys,
    user_foreign_key,
)


class Migration(migrations.Migration):

    dependencies = [
        ('memories', '0020_entity_roles'),
        ('tenants', '0007_api_keys_limited_to_namespaces_or_reads'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AlterField(
            model_name='memoryentity',
            name='role',
            field=models.CharField(choices=[('speaker', 'Speaker'), ('mentioned', 'Mentioned')], db_default='mentioned', default='mentioned', max_length=16),
        ),
        migrations.CreateModel(
            name='Erasure',
            fields=[
                ('id', models.UUIDField(default=uuid.uuid4, editable=False, primary_key=True, serialize=False)),
                ('scope', models.JSONField(help_text='What was erased: {"namespace": "users/alice"}, {"agent": id}, {"session": id} or {"all": true}, and for an agent\'s own data its agent.')),
                ('counts', models.JSONField(default=dict, help_text='Rows deleted, by kind.')),
                ('via', models.CharField(help_text='api, console or command', max_length=16)),
                ('created_at', models.DateTimeField(auto_now_add=True, db_default=django.db.models.functions.datetime.Now())),
                ('org', models.ForeignKey(db_column='org_id', db_constraint=False, db_index=False, on_delete=django.db.models.deletion.DO_NOTHING, related_name='+', to='tenants.organization')),
                ('requested_by_agent', models.ForeignKey(blank=True, db_column='requested_by_agent_id', db_constraint=False, db_index=False, null=True, on_delete=django.db.models.deletion.DO_NOTHING, related_name='+', to='tenants.agent')),
                ('requested_by_user', models.ForeignKey(blank=True, db_constraint=False, db_index=False, null=True, on_delete=django.db.models.deletion.DO_NOTHING, related_name='+', to=settings.AUTH_USER_MODEL)),
            ],
            options={
                'db_table': 'erasures',
                'ordering': ['-created_at'],
                'indexes': [models.Index(fields=['org', '-created_at'], name='erasures_org_created')],
            },
        ),
        tenant_keys("erasures"),
        tenant_foreign_key("erasures", TenantReference(("requested_by_agent_id",), "agents", on_delete="SET NULL")),
        user_foreign_key("erasures", "requested_by_user_id", on_delete="SET NULL"),
        enable_tenant_rls("erasures"),
    ]
