"""Decay and time to live (issue 19; memories.lifecycle.strength, memories.lifecycle).

* memories.reinforced_at: when the decay clock last restarted other than by a retrieval;
  memories.ttl_seconds: the time to live a memory was written with, which a read may refresh.
* Episodes do not decay by default (decay_rate 0): the ones written before get that too.
* The covering index of live vectors also holds decay_rate and reinforced_at, which the final
  ranking's strength reads; built CONCURRENTLY under a temporary name (as migration 0012), so
  writes go on and exact searches keep the old index until the new one is ready.
* lifecycle_runs: what each scheduled lifecycle job did to each organisation, a tenant table.
"""

import uuid

import django.db.models.deletion
import django.db.models.functions.datetime
from django.contrib.postgres.operations import AddIndexConcurrently, RemoveIndexConcurrently
from django.db import migrations, models
from django.db.models import Q

from memory_platform.schema import as_service_account, enable_tenant_rls, tenant_keys

LIVE = Q(status="active", deleted_at__isnull=True)

EPISODES_DO_NOT_DECAY = as_service_account(
    "UPDATE memories SET decay_rate = 0 WHERE memory_type = 'episodic' AND decay_rate <> 0;")


def live_vectors(name: str, include: list[str]) -> models.Index:
    return models.Index(fields=["org"], include=include, condition=LIVE & Q(embedding__isnull=False), name=name)


class Migration(migrations.Migration):
    atomic = False  # CREATE INDEX CONCURRENTLY cannot run in a transaction

    dependencies = [
        ('memories', '0021_erasures'),
        ('tenants', '0007_api_keys_limited_to_namespaces_or_reads'),
    ]

    operations = [
        migrations.AddField(
            model_name='memory',
            name='reinforced_at',
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name='memory',
            name='ttl_seconds',
            field=models.PositiveIntegerField(blank=True, null=True),
        ),
        migrations.AddConstraint(
            model_name='memory',
            constraint=models.CheckConstraint(condition=models.Q(('ttl_seconds__isnull', True), models.Q(('expires_at__isnull', False), ('ttl_seconds__gt', 0)), _connector='OR'), name='memories_ttl_positive_and_expiring'),
        ),
        migrations.RunSQL(EPISODES_DO_NOT_DECAY, migrations.RunSQL.noop),
        AddIndexConcurrently("memory", live_vectors(
            "memories_live_vectors_new",
            ["id", "embedding", "expires_at", "importance", "confidence", "created_at", "decay_rate",
             "reinforced_at"])),
        RemoveIndexConcurrently("memory", "memories_live_vectors"),
        migrations.RenameIndex("memory", new_name="memories_live_vectors", old_name="memories_live_vectors_new"),
        migrations.CreateModel(
            name='LifecycleRun',
            fields=[
                ('id', models.UUIDField(default=uuid.uuid4, editable=False, primary_key=True, serialize=False)),
                ('job', models.CharField(choices=[('decay', 'Decay'), ('expiry', 'Expiry')], max_length=16)),
                ('started_at', models.DateTimeField()),
                ('finished_at', models.DateTimeField(auto_now_add=True, db_default=django.db.models.functions.datetime.Now())),
                ('counts', models.JSONField(default=dict)),
                ('org', models.ForeignKey(db_column='org_id', db_constraint=False, db_index=False, on_delete=django.db.models.deletion.DO_NOTHING, related_name='+', to='tenants.organization')),
            ],
            options={
                'db_table': 'lifecycle_runs',
                'ordering': ['-finished_at'],
                'indexes': [models.Index(fields=['org', 'job', '-finished_at'], name='lifecycle_runs_latest')],
                'constraints': [models.CheckConstraint(condition=models.Q(('job__in', ['decay', 'expiry'])), name='lifecycle_runs_job_valid')],
            },
        ),
        tenant_keys("lifecycle_runs"),
        enable_tenant_rls("lifecycle_runs"),
    ]
