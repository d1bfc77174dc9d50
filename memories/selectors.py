"""Reads of memories, always within one organisation (RLS would catch a missing filter; the
filter is kept anyway, as defence in depth)."""

from __future__ import annotations

from django.db.models import Prefetch, Q, QuerySet

from memories.access import EVERYWHERE, KeyReach, scope_prefix_filter
from memories.errors import NotFound
from memories.models import Memory, MemoryRelationship, MemoryTag, MemoryVersion


def _with_tags(queryset: QuerySet) -> QuerySet:
    return queryset.prefetch_related(Prefetch("tags", queryset=MemoryTag.objects.order_by("tag")))


def memory_get(*, org_id, memory_id, include_deleted: bool = True) -> Memory:
    queryset = _with_tags(Memory.objects.filter(org_id=org_id))
    if not include_deleted:
        queryset = queryset.filter(deleted_at__isnull=True)
    try:
        return queryset.get(pk=memory_id)
    except (Memory.DoesNotExist, ValueError):
        raise NotFound(f"memory {memory_id} not found") from None


def memory_list(*, org_id, category=None, status=None, memory_type=None, agent=None, session=None,
                namespace=None, tag=None, created_after=None, created_before=None,
                include_deleted: bool = False, **ignored) -> QuerySet:
    queryset = Memory.objects.filter(org_id=org_id)
    if not include_deleted:
        queryset = queryset.filter(deleted_at__isnull=True)
    exact = {"category": category, "status": status, "memory_type": memory_type, "agent_id": agent,
             "session_id": session, "created_at__gte": created_after, "created_at__lt": created_before}
    queryset = queryset.filter(**{name: value for name, value in exact.items() if value is not None})
    if namespace:
        queryset = queryset.filter(scope_prefix_filter(namespace))
    for each in tag or []:
        queryset = queryset.filter(pk__in=MemoryTag.objects.filter(org_id=org_id, tag=each).values("memory_id"))
    return _with_tags(queryset)


def memory_versions(*, org_id, memory_id) -> QuerySet:
    memory_get(org_id=org_id, memory_id=memory_id)
    return (MemoryVersion.objects.filter(org_id=org_id, memory_id=memory_id)
            .select_related("changed_by_user").order_by("version_num"))


def memory_relationships(*, org_id, memory_id, reach: KeyReach = EVERYWHERE) -> QuerySet:
    """A memory's relationships, both directions: those whose both ends are in reach."""
    memory_get(org_id=org_id, memory_id=memory_id)
    return (relationships_in_reach(org_id=org_id, reach=reach)
            .filter(Q(source_id=memory_id) | Q(target_id=memory_id)).order_by("created_at"))


def relationships_in_reach(*, org_id, reach: KeyReach = EVERYWHERE) -> QuerySet:
    return MemoryRelationship.objects.filter(reach.memories("source__"), reach.memories("target__"), org_id=org_id)


def memory_tags(*, org_id, memory_id) -> list[str]:
    memory_get(org_id=org_id, memory_id=memory_id)
    return list(MemoryTag.objects.filter(org_id=org_id, memory_id=memory_id).order_by("tag")
                .values_list("tag", flat=True))


# --------------------------------------------------------------------------- the namespace store


def store_get(*, org_id, scope: str, key: str) -> Memory:
    memory = _with_tags(Memory.objects.filter(org_id=org_id, scope=scope, key=key, deleted_at__isnull=True)).first()
    if memory is None:
        raise NotFound(f"no item {key!r} in namespace {scope!r}", field="key")
    return memory


def store_keys(*, org_id, scope: str) -> list[str]:
    return list(Memory.objects.filter(org_id=org_id, scope=scope, key__isnull=False, deleted_at__isnull=True)
                .order_by("key").values_list("key", flat=True))


def store_namespaces(*, org_id, prefix: str = "", limit: int = 1000, reach: KeyReach = EVERYWHERE) -> list[str]:
    queryset = Memory.objects.filter(reach.memories(), org_id=org_id, deleted_at__isnull=True).exclude(scope="")
    if prefix:
        queryset = queryset.filter(scope_prefix_filter(prefix))
    return list(queryset.order_by("scope").values_list("scope", flat=True).distinct()[:limit])
