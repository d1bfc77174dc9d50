"""Reads of memories and the entities they mention, always within one organisation (RLS
would catch a missing filter; the filter is kept anyway, as defence in depth)."""

from __future__ import annotations

from django.db import connection
from django.db.models import BooleanField, Prefetch, Q, QuerySet
from django.db.models.expressions import RawSQL
from django.db.models.functions import Now

from memories import store_values
from memories.access import EVERYWHERE, KeyReach, namespace_sql, scope_prefix_filter
from memories.entities import name_key
from memories.errors import NotFound
from memories.models import (
    LIVE,
    Entity,
    EntityAlias,
    Memory,
    MemoryEntity,
    MemoryRelationship,
    MemoryTag,
    MemoryVersion,
)


def _with_tags(queryset: QuerySet) -> QuerySet:
    return queryset.prefetch_related(Prefetch("tags", queryset=MemoryTag.objects.order_by("tag")))


# A memory past its expiry is gone to every read at once, before the sweep removes it for good
# (memories.lifecycle.expiry); the console may still open it, and a list may ask for it.
NOT_EXPIRED = Q(expires_at__isnull=True) | Q(expires_at__gt=Now())


def memory_get(*, org_id, memory_id, include_deleted: bool = True, include_expired: bool = False) -> Memory:
    queryset = _with_tags(Memory.objects.filter(org_id=org_id))
    if not include_deleted:
        queryset = queryset.filter(deleted_at__isnull=True)
    if not include_expired:
        queryset = queryset.filter(NOT_EXPIRED)
    try:
        return queryset.get(pk=memory_id)
    except (Memory.DoesNotExist, ValueError):
        raise NotFound(f"memory {memory_id} not found") from None


def memory_list(*, org_id, category=None, status=None, memory_type=None, agent=None, session=None,
                namespace=None, tag=None, created_after=None, created_before=None,
                include_deleted: bool = False, include_expired: bool = False, **ignored) -> QuerySet:
    queryset = Memory.objects.filter(org_id=org_id)
    if not include_deleted:
        queryset = queryset.filter(deleted_at__isnull=True)
    if not include_expired:
        queryset = queryset.filter(NOT_EXPIRED)
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
    """The store item at namespace and key."""
    memory = _with_tags(Memory.objects.filter(NOT_EXPIRED, org_id=org_id, scope=scope, key=key,
                                              deleted_at__isnull=True)).first()
    if memory is None:
        raise NotFound(f"no item {key!r} in namespace {scope!r}", field="key")
    return memory


def store_items(*, org_id, prefix: str = "", value_filter: dict | None = None, limit: int = 10, offset: int = 0,
                reach: KeyReach = EVERYWHERE, exactly: bool = False) -> list[Memory]:
    """LangGraph's search without a query: the items under a namespace prefix ("" for all)
    whose value passes the filter (memories.store_values), the last updated first, `offset`
    of them skipped. exactly: the items of the namespace `prefix` alone."""
    queryset = Memory.objects.filter(NOT_EXPIRED, reach.memories(), org_id=org_id, key__isnull=False,
                                     deleted_at__isnull=True)
    if exactly:  # the namespace itself, none under it
        queryset = queryset.filter(scope=prefix)
    elif prefix:
        queryset = queryset.filter(scope_prefix_filter(prefix))
    if value_filter:
        sql, params = store_values.filter_sql(store_values.filter_conditions(value_filter), '"memories"."metadata"')
        queryset = queryset.filter(RawSQL(sql, params, output_field=BooleanField()))
    return list(queryset.order_by("-updated_at", "id")[offset:offset + limit])


# LangGraph's list_namespaces over the namespaces that hold items: a namespace is its labels
# (the scope split at "/"), matched label by label ("*" matches any one), cut to max_depth,
# each listed once, in the order of their labels (as Python sorts tuples: by code point).
NAMESPACES_SQL = """
    SELECT DISTINCT labels[1:%s] AS listed
    FROM (SELECT string_to_array(m.scope, '/') COLLATE "C" AS labels
          FROM memories m
          WHERE m.org_id = %s AND m.key IS NOT NULL AND m.deleted_at IS NULL AND m.scope <> ''
            AND (m.expires_at IS NULL OR m.expires_at > now()) {conditions}) AS items
    ORDER BY listed
    LIMIT %s OFFSET %s
"""


def _labels_match(path: tuple[str, ...], from_end: bool) -> tuple[list[str], list]:
    """Conditions that the namespace's labels begin (or end, from_end) with `path`."""
    conditions, params = ["cardinality(string_to_array(m.scope, '/')) >= %s"], [len(path)]
    for position, label in enumerate(path):
        if label == "*":
            continue
        if from_end:
            conditions.append("(string_to_array(m.scope, '/'))[cardinality(string_to_array(m.scope, '/')) - %s] = %s")
            params += [len(path) - 1 - position, label]
        else:
            conditions.append("(string_to_array(m.scope, '/'))[%s] = %s")
            params += [position + 1, label]
    return conditions, params


def store_namespaces(*, org_id, prefix: tuple[str, ...] = (), suffix: tuple[str, ...] = (),
                     max_depth: int | None = None, limit: int = 100, offset: int = 0,
                     reach: KeyReach = EVERYWHERE) -> list[list[str]]:
    """The namespaces that hold store items, as lists of labels: those beginning with `prefix`
    and ending with `suffix` ("*" matches any label), cut to their first max_depth labels and
    then listed once each, in order; `offset` of them skipped."""
    conditions, params = [], []
    for path, from_end in ((prefix, False), (suffix, True)):
        if path:
            more, values = _labels_match(tuple(path), from_end)
            conditions += more
            params += values
    if reach.limited:
        under = [namespace_sql(namespace, "m.scope") for namespace in reach.namespaces]
        conditions.append("(" + " OR ".join(sql for sql, _ in under) + ")")
        params += [value for _, values in under for value in values]
    sql = NAMESPACES_SQL.format(conditions="".join(f" AND {condition}" for condition in conditions))
    with connection.cursor() as cursor:
        # labels[1:NULL] is NULL: no max_depth is the whole namespace (PostgreSQL's arrays hold
        # at most 6 dimensions, not labels: 2**31 - 1 covers any).
        cursor.execute(sql, [max_depth if max_depth is not None else 2**31 - 1, org_id, *params, limit, offset])
        return [list(row[0]) for row in cursor.fetchall()]


# --------------------------------------------------------------------------- entities
# An entity lives in one namespace (its scope, as a memory's), so a key's reach and a namespace
# prefix select entities by the same rule as memories (memories.access).


def _with_aliases(queryset: QuerySet) -> QuerySet:
    return queryset.prefetch_related(Prefetch("aliases", queryset=EntityAlias.objects.order_by("alias")))


def entity_list(*, org_id, namespace: str | None = None, kind: str | None = None, query: str | None = None,
                reach: KeyReach = EVERYWHERE) -> QuerySet:
    """Entities in reach, the most mentioned first (then by name). namespace: a prefix, as
    memory_list takes it. query: a name or an alias, folded as names are (name_key), matching
    its beginning or the beginning of one of its words ("smi" finds "John Smith"); a query
    that folds to nothing names nothing."""
    queryset = Entity.objects.filter(reach.memories(), org_id=org_id)
    if namespace:
        queryset = queryset.filter(scope_prefix_filter(namespace))
    if kind:
        queryset = queryset.filter(kind=kind)
    if query is not None:
        key = name_key(query)
        if not key:
            return queryset.none()
        named = Q(key__startswith=key) | Q(key__contains=f" {key}")  # the name or an alias, any word of it
        aliased = EntityAlias.objects.filter(named, org_id=org_id)
        queryset = queryset.filter(named | Q(pk__in=aliased.values("entity_id")))
    return _with_aliases(queryset).order_by("-mention_count", "name", "id")


def entity_get(*, org_id, entity_id, reach: KeyReach = EVERYWHERE) -> Entity:
    """One entity with its aliases; out of the key's reach it is missing, as another
    organisation's is."""
    try:
        return _with_aliases(Entity.objects.filter(reach.memories(), org_id=org_id)).get(pk=entity_id)
    except (Entity.DoesNotExist, ValueError):
        raise NotFound(f"entity {entity_id} not found") from None


def _linked_memories(*, org_id, entity_id, reach: KeyReach) -> QuerySet:
    """The live memories that mention the entity, in reach (a memory is linked to the
    entities of its own namespace; the reach is applied to the memories anyway)."""
    links = MemoryEntity.objects.filter(org_id=org_id, entity_id=entity_id).values("memory_id")
    return (Memory.objects.without_usage().filter(LIVE, NOT_EXPIRED, reach.memories(), org_id=org_id, pk__in=links)
            .defer("embedding", "search_vector"))


def entity_facts(*, org_id, entity_id, limit: int, reach: KeyReach = EVERYWHERE) -> list[Memory]:
    """What is remembered of an entity: the live memories that mention it, the most recent
    first. An unknown entity has none (entity_get says whether it exists)."""
    return list(_linked_memories(org_id=org_id, entity_id=entity_id, reach=reach)
                .order_by("-created_at", "-id")[:limit])


def entity_timeline(*, org_id, entity_id, limit: int, reach: KeyReach = EVERYWHERE) -> list[Memory]:
    """The entity's story: the live memories that mention it and say when they happened
    (event_time), the earliest first."""
    return list(_linked_memories(org_id=org_id, entity_id=entity_id, reach=reach)
                .filter(event_time__isnull=False).order_by("event_time", "created_at", "id")[:limit])


def memory_entities(*, org_id, memory_id) -> QuerySet:
    """The entities a memory mentions, by kind and name."""
    links = MemoryEntity.objects.filter(org_id=org_id, memory_id=memory_id).values("entity_id")
    return Entity.objects.filter(org_id=org_id, pk__in=links).order_by("kind", "name")
