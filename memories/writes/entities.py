"""Entities on write: each new live memory is linked to the entities it mentions (found by
memories.understanding.entities.extract, or named by the agent), each resolved within the memory's
namespace by name, alias or short name, and created when new (spec §4's node-entity links).

A batch resolves all its mentions with a handful of statements whatever its size.
"""

from __future__ import annotations

from collections import Counter, defaultdict

from django.db.models import F
from django.utils import timezone

from memories.models import Entity, EntityAlias, Memory, MemoryEntity
from memories.understanding.entities import Mention, extract, name_key, nickname_of


def given_mentions(given: list[dict] | None) -> list[Mention]:
    """The entities an agent named with a write: {"name", "type", "aliases"?}."""
    return [Mention(item["name"], item.get("type") or "person", item["name"]) for item in given or []]


def known_entities(org_id, namespace: str, keys: set[str]) -> tuple[dict, dict]:
    """The namespace's entities named by these keys: by (kind, key), and by alias key."""
    by_name = {(entity.kind, entity.key): entity
               for entity in Entity.objects.filter(org_id=org_id, namespace=namespace, key__in=keys)}
    by_alias = defaultdict(list)
    for alias in EntityAlias.objects.filter(org_id=org_id, key__in=keys,
                                            entity__namespace=namespace).select_related("entity"):
        by_alias[alias.key].append(alias.entity)
    return by_name, by_alias


def resolve(org_id, namespace: str, mentions: list[Mention], aliases_given: dict) -> dict[tuple, Entity | None]:
    """Each mention's entity in the namespace, created when it is new (None: a sentence's
    first word that names nothing known). Records the aliases learnt on the way."""
    keys = {mention.key for mention in mentions} | {name_key(a) for names in aliases_given.values() for a in names}
    by_name, by_alias = known_entities(org_id, namespace, keys)
    people = None  # the namespace's people, read once if a short name needs them
    resolved: dict[tuple, Entity | None] = {}
    new_aliases: list[tuple[Entity, str]] = []
    for mention in mentions:
        identity = (mention.kind, mention.key)
        if identity in resolved:
            continue
        entity = by_name.get(identity)
        if entity is None and mention.guessed:  # the kind a name is known as wins ("how is Sweden?": the place)
            others = [known for (kind, key), known in by_name.items() if key == mention.key]
            entity = others[0] if len(others) == 1 else None
        if entity is None and len(by_alias.get(mention.key, [])) == 1:
            entity = by_alias[mention.key][0]
        if entity is None and (mention.kind == "person" or mention.guessed) and " " not in mention.key:
            if people is None:
                people = list(Entity.objects.filter(org_id=org_id, namespace=namespace, kind="person"))
            longer = [person for person in people if nickname_of(mention.key, person.key)]
            shorter = [person for person in people if nickname_of(person.key, mention.key)]
            if len(longer) == 1 and not shorter:  # "Mel", Melanie known: Melanie
                entity = longer[0]
                new_aliases.append((entity, mention.name))
            elif len(shorter) == 1 and not longer and not mention.known_only:  # "Melanie", Mel known
                entity = shorter[0]
                new_aliases.append((entity, entity.name))
                Entity.objects.filter(pk=entity.pk).update(name=mention.name, key=mention.key)
                entity.name, entity.key = mention.name, mention.key
        if entity is None and not mention.known_only:
            entity, _ = Entity.objects.get_or_create(org_id=org_id, namespace=namespace, kind=mention.kind,
                                                     key=mention.key, defaults={"name": mention.name})
            by_name[identity] = entity
            if people is not None and entity.kind == "person":
                people.append(entity)
        resolved[identity] = entity
        for alias in aliases_given.get(identity, []):
            new_aliases.append((entity, alias))
    EntityAlias.objects.bulk_create(
        [EntityAlias(org_id=org_id, entity=entity, alias=alias, key=name_key(alias)) for entity, alias in new_aliases
         if entity is not None and name_key(alias) and name_key(alias) != entity.key],
        ignore_conflicts=True)
    return resolved


def link_entities(org_id, memories: list[Memory], given: dict | None = None) -> list[MemoryEntity]:
    """Link the new live memories among `memories` to the entities they mention, inside the
    caller's transaction. given: memory pk -> the entities the agent named with it."""
    given = given or {}
    live = [memory for memory in memories if memory.is_live]
    # Each memory's mentions with where they came from: the agent's first, then the extractor's.
    sourced = {memory.pk: [*((mention, "agent") for mention in given_mentions(given.get(memory.pk))),
                           *((mention, "extractor") for mention in extract(memory.content))] for memory in live}
    mentions_of = {memory_id: [mention for mention, _ in pairs] for memory_id, pairs in sourced.items()}
    aliases_given = {(item.get("type") or "person", name_key(item["name"])): item.get("aliases", [])
                     for items in given.values() for item in items}
    by_namespace = defaultdict(list)
    for memory in live:
        by_namespace[memory.namespace].extend(mentions_of[memory.pk])
    resolved = {namespace: resolve(org_id, namespace, mentions, aliases_given)
                for namespace, mentions in by_namespace.items() if mentions}
    linked = defaultdict(set)  # an edited memory keeps the links the agent gave
    for memory_id, entity_id in MemoryEntity.objects.filter(org_id=org_id, memory__in=live).values_list(
            "memory_id", "entity_id"):
        linked[memory_id].add(entity_id)
    links, counts = [], Counter()
    for memory in live:
        seen = linked[memory.pk]
        speakers = {(mention.kind, mention.key) for mention in mentions_of[memory.pk] if mention.speaker}
        for mention, source in sourced[memory.pk]:
            entity = resolved[memory.namespace].get((mention.kind, mention.key))
            if entity is None or entity.pk in seen:
                continue
            seen.add(entity.pk)
            counts[entity.pk] += 1
            role = "speaker" if (mention.kind, mention.key) in speakers else "mentioned"
            links.append(MemoryEntity(org_id=org_id, memory=memory, entity=entity, mention=mention.text[:256],
                                      source=source, role=role))
    by_increment = defaultdict(list)
    for entity_id, count in counts.items():
        by_increment[count].append(entity_id)
    now = timezone.now()
    for count, entity_ids in by_increment.items():
        Entity.objects.filter(pk__in=entity_ids, org_id=org_id).update(mention_count=F("mention_count") + count,
                                                                           last_seen_at=now)
    return MemoryEntity.objects.bulk_create(links, ignore_conflicts=True)


def relink_entities(org_id, memory: Memory) -> list[MemoryEntity]:
    """After an edit of a memory's content or namespace: the extractor's links are found
    again (those the agent named stay while the namespace does)."""
    stale = MemoryEntity.objects.filter(org_id=org_id, memory=memory)
    kept = list(stale.filter(source="agent", entity__namespace=memory.namespace).values_list("entity_id", flat=True))
    stale.exclude(entity_id__in=kept).delete()
    return link_entities(org_id, [memory])
