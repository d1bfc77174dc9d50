"""Reads of memories and the entities they mention, always within one organisation (RLS
would catch a missing filter; the filter is kept anyway, as defence in depth)."""

from __future__ import annotations

from django.db.models import BooleanField, Prefetch, Q, QuerySet
from django.db.models.expressions import RawSQL
from django.db.models.functions import Now

from memories.access import EVERYWHERE, KeyReach, namespace_prefix_filter, namespace_sql
from memories.errors import NotFound
from memories.lifecycle import tallies
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
from memories.understanding.entities import name_key


def with_tags(queryset: QuerySet, org_id) -> QuerySet:
    """The memories with their tags, read in one more query: named by organisation too, so on a
    Citus cluster it goes to that organisation's shard only (docs/adr/0042)."""
    return queryset.prefetch_related(
        Prefetch("tags", queryset=MemoryTag.objects.filter(org_id=org_id).order_by("tag")),
        # Who said each (the speaker link), for the memory's `speaker`.
        Prefetch("entity_links", queryset=MemoryEntity.objects.filter(org_id=org_id, role="speaker").select_related(
            "entity").order_by("source", "created_at")))


# A memory past its expiry is gone to every read at once, before the sweep removes it for good
# (memories.lifecycle.expiry); the console may still open it, and a list may ask for it.
NOT_EXPIRED = Q(expires_at__isnull=True) | Q(expires_at__gt=Now())


def memory_get(*, org_id, memory_id, include_deleted: bool = True, include_expired: bool = False) -> Memory:
    queryset = with_tags(Memory.objects.filter(org_id=org_id), org_id)
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
        queryset = queryset.filter(namespace_prefix_filter(namespace))
    for each in tag or []:
        queryset = queryset.filter(_tagged(org_id, each, namespace))
    return with_tags(queryset, org_id)


def _tagged(org_id, tag: str, namespace: str | None):
    """The memories tagged `tag`, as a filter. Under a namespace, two ways, chosen by what each
    reads: the tag's rows across the organisation, joined to the namespace's memories; or, when
    the tag has more rows than the namespace holds memories (a tag common across many end users',
    counted up to that many), each of the namespace's memories asked whether it carries the tag,
    so the read is bounded by the namespace, not the organisation (OFFSET 0 keeps it a probe per
    memory: PostgreSQL would otherwise read every row of the tag to join them)."""
    rows = MemoryTag.objects.filter(org_id=org_id, tag=tag)
    if namespace:
        held = tallies.namespaces_held(org_id, [namespace_sql(namespace, "scope")])
        if rows[:held + 1].count() > held:
            return RawSQL("EXISTS (SELECT FROM memory_tags tagged WHERE tagged.org_id = memories.org_id "
                          "AND tagged.memory_id = memories.id AND tagged.tag = %s OFFSET 0)", [tag],
                          output_field=BooleanField())
    return Q(pk__in=rows.values("memory_id"))


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


# --------------------------------------------------------------------------- entities
# An entity lives in one namespace, as a memory does, so a key's reach and a namespace
# prefix select entities by the same rule as memories (memories.access).


def _with_aliases(queryset: QuerySet, org_id) -> QuerySet:
    return queryset.prefetch_related(Prefetch("aliases", queryset=EntityAlias.objects.filter(org_id=org_id)
                                              .order_by("alias")))


# The entities whose name or an alias has a word starting with the text: a prefix of one of the
# keys' tails (the key from the start of each word), found in the GIN indexes of name_tails and
# alias_tails (migration 0045, docs/adr/0053). Both are on the entity's row, so the planner chooses
# the indexes for a rare text or the walk of the most mentioned for a common one.
NAMED_BY_ID = 1000
NAMED_SQL = "(entities.name_tails @@ %s::tsquery OR entities.alias_tails @@ %s::tsquery)"


def word_start_query(org_id, key: str) -> str:
    """The prefix query that finds `key` at the start of a tail of the organisation's names or
    retrieval events' queries (migrations 0045, 0047: a tail is tagged with the first 8 hex digits
    of the organisation's id), as tsquery's input: one quoted lexeme, its quotes and backslashes
    doubled, and :* for "starts with"."""
    lexeme = f"{str(org_id)[:8]}{key}".replace("\\", "\\\\").replace("'", "''")
    return f"'{lexeme}':*"


def _matches(queryset: QuerySet, where: str, params: list) -> QuerySet:
    """`queryset` kept to the rows matching `where` (a tails match, its GIN index). The planner
    cannot tell a rare text from a common one (a tail is mostly unique, so its statistics know
    few), so it is told: up to NAMED_BY_ID matches are read from the index and kept by id; more
    are the queryset's own order walked and filtered (docs/adr/0053)."""
    named = queryset.extra(where=[where], params=params)
    found = list(named.order_by().values_list("pk", flat=True)[:NAMED_BY_ID + 1])
    return queryset.filter(pk__in=found) if len(found) <= NAMED_BY_ID else named


def entity_list(*, org_id, namespace: str | None = None, kind: str | None = None, query: str | None = None,
                reach: KeyReach = EVERYWHERE) -> QuerySet:
    """Entities in reach, the most mentioned first, ties by id (an order pages by key:
    memories.keyset). namespace: a prefix, as memory_list takes it. query: a name or an alias, folded as names are (name_key), matching
    its beginning or the beginning of one of its words ("smi" finds "John Smith"); a query
    that folds to nothing names nothing."""
    queryset = Entity.objects.filter(reach.memories(), org_id=org_id)
    if namespace:
        queryset = queryset.filter(namespace_prefix_filter(namespace))
    if kind:
        queryset = queryset.filter(kind=kind)
    if query is not None:
        key = name_key(query)
        if not key:
            return queryset.none()
        queryset = _matches(queryset, NAMED_SQL, [word_start_query(org_id, key)] * 2)
    return _with_aliases(queryset, org_id).order_by("-mention_count", "-id")


def entity_get(*, org_id, entity_id, reach: KeyReach = EVERYWHERE) -> Entity:
    """One entity with its aliases; out of the key's reach it is missing, as another
    organisation's is."""
    try:
        return _with_aliases(Entity.objects.filter(reach.memories(), org_id=org_id), org_id).get(pk=entity_id)
    except (Entity.DoesNotExist, ValueError):
        raise NotFound(f"entity {entity_id} not found") from None


def _linked_memories(*, org_id, entity: Entity, reach: KeyReach, limit: int) -> QuerySet:
    """The live memories that mention the entity, in reach, to be read in some order `limit`
    at a time. Only memories of the entity's own namespace: the write path links a memory to
    the entities of its namespace alone, and a link from another namespace (an import of
    hand-made data, a write that bypassed it) would carry another end user's memory into this
    one's entity, across the namespace's boundary.

    Two ways, chosen by what each reads: every mention of the entity (its mention_count rows),
    or the namespace's memories in the list's order, each asked whether it mentions the entity,
    until `limit` do (about limit x the namespace's memories / mention_count rows; the
    namespace's size from its tallies). The second is for an entity most of its namespace
    speaks of, whose mentions grow with the namespace; the ask stays a probe per memory
    (OFFSET 0: PostgreSQL would otherwise read every mention to join them)."""
    memories = (Memory.objects.without_usage()
                .filter(LIVE, NOT_EXPIRED, reach.memories(), org_id=org_id, namespace=entity.namespace)
                .defer("embedding", "search_vector"))
    held = tallies.namespace_held(org_id, entity.namespace)
    if entity.mention_count ** 2 <= limit * held:
        links = MemoryEntity.objects.filter(org_id=org_id, entity_id=entity.pk).values("memory_id")
        return memories.filter(pk__in=links)
    mentions = RawSQL("EXISTS (SELECT FROM memory_entities link WHERE link.org_id = memories.org_id "
                      "AND link.memory_id = memories.id AND link.entity_id = %s OFFSET 0)", [entity.pk],
                      output_field=BooleanField())
    return memories.alias(mentions=mentions).filter(mentions=True)


def entity_facts(*, org_id, entity: Entity, limit: int, reach: KeyReach = EVERYWHERE) -> list[Memory]:
    """What is remembered of an entity: the live memories that mention it, the most recent
    first."""
    return list(_linked_memories(org_id=org_id, entity=entity, reach=reach, limit=limit)
                .order_by("-created_at", "-id")[:limit])


def entity_timeline(*, org_id, entity: Entity, limit: int, reach: KeyReach = EVERYWHERE) -> list[Memory]:
    """The entity's story: the live memories that mention it and say when they happened
    (event_time), the earliest first."""
    return list(_linked_memories(org_id=org_id, entity=entity, reach=reach, limit=limit)
                .filter(event_time__isnull=False).order_by("event_time", "created_at", "id")[:limit])


def memory_entities(*, org_id, memory_id) -> QuerySet:
    """The entities a memory mentions, by kind and name."""
    links = MemoryEntity.objects.filter(org_id=org_id, memory_id=memory_id).values("entity_id")
    return Entity.objects.filter(org_id=org_id, pk__in=links).order_by("kind", "name")


# --------------------------------------------------------------------------- retrieval events

# A retrieval event's query tails (migration 0047): the folded query from the start of each word,
# each cut at EVENT_TAIL_CHARS.
EVENT_TAIL_CHARS = 60
EVENT_QUERY_SQL = "retrieval_events.query_tails @@ %s::tsquery"


def events_with_query_text(queryset: QuerySet, *, org_id, text: str) -> QuerySet:
    """The events of `queryset` whose query holds `text`, whatever its case, starting at the
    start of a word: "par" and "to paris" find "Flights to Paris?", "aris" does not. A word is
    a run of letters and digits; what comes before the text's first one must match as it is
    ("#tag" finds "a #tag", not "a tag"). Found by the events' query tails (docs/adr/0056); a
    text with no letter or digit is looked for in every query."""
    start = next((place for place, char in enumerate(text) if char.isalnum()), None)
    if start is None:
        return queryset.filter(query__icontains=text)
    key = text[start:].lower()[:EVENT_TAIL_CHARS]
    found = _matches(queryset, EVENT_QUERY_SQL, [word_start_query(org_id, key)])
    # A tail holds the first EVENT_TAIL_CHARS of a word's run, and the text may begin with
    # something before its first word: the whole text is checked on what the index found.
    return found.filter(query__icontains=text) if start or len(text) > EVENT_TAIL_CHARS else found
