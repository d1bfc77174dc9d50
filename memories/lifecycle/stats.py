"""The store at a glance (spec §4's memory_stats): memories by status, category, type and
strength, growth, relationships and entities, and what the scheduled lifecycle jobs last
did. Within a key's reach and an optional namespace prefix, as every read."""

from __future__ import annotations

from datetime import timedelta

from django.db.models import Count, Q
from django.db.models.functions import TruncDate
from django.utils import timezone

from memories.access import EVERYWHERE, KeyReach, namespace_prefix_filter
from memories.lifecycle.decay import strength_bands
from memories.models import Entity, LifecycleRun, Memory, MemoryRelationship

GROWTH_DAYS = 30


def _counted(queryset, field: str) -> dict:
    return {row[field]: row["n"] for row in queryset.values(field).annotate(n=Count("pk")).order_by(field)}


def memory_stats(*, org_id, namespace: str | None = None, reach: KeyReach = EVERYWHERE) -> dict:
    memories = Memory.objects.without_usage().filter(reach.memories(), org_id=org_id, deleted_at__isnull=True)
    entities = Entity.objects.filter(reach.memories(), org_id=org_id)
    if namespace:
        memories = memories.filter(namespace_prefix_filter(namespace))
        entities = entities.filter(namespace_prefix_filter(namespace))
    live = memories.filter(status=Memory.Status.ACTIVE)
    since = timezone.now() - timedelta(days=GROWTH_DAYS)
    growth = (memories.filter(created_at__gte=since).annotate(day=TruncDate("created_at")).values("day")
              .annotate(n=Count("pk")).order_by("day"))
    relationships = MemoryRelationship.objects.filter(org_id=org_id, source__in=memories, target__in=memories)
    totals = live.aggregate(live=Count("pk"), not_decaying=Count("pk", filter=Q(decay_rate=0)),
                            expiring=Count("pk", filter=Q(expires_at__isnull=False)),
                            embedding_pending=Count("pk", filter=Q(embedding__isnull=True, indexed=True)))
    not_decaying = totals.pop("not_decaying")
    return {
        "memories": {
            "total": memories.count(), **totals,
            "by_status": _counted(memories, "status"),
            "by_category": _counted(memories, "category"),
            "by_memory_type": _counted(memories, "memory_type"),
            "strength": {**strength_bands(org_id=org_id, namespace=namespace, reach=reach),
                         "not_decaying": not_decaying},
        },
        "growth": [{"date": row["day"], "created": row["n"]} for row in growth],
        "relationships": _counted(relationships, "relation_type"),
        "entities": _counted(entities, "kind"),
        "lifecycle": {job: last_run(org_id, job, with_counts=not reach.limited) for job in LifecycleRun.Job.values},
    }


def last_run(org_id, job: str, *, with_counts: bool) -> dict | None:
    """When the job last ran for the organisation, and (for a caller who sees the whole
    organisation) what it did."""
    run = LifecycleRun.objects.filter(org_id=org_id, job=job).order_by("-finished_at").first()
    if run is None:
        return None
    return {"finished_at": run.finished_at, **({"counts": run.counts} if with_counts else {})}
