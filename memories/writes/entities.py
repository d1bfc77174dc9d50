"""Entities on write: each new live memory is linked to the entities it mentions (found by
memories.understanding.entities.extract, or named by the agent), each resolved within the memory's
namespace by name, alias or short name, and created when new (spec §4's node-entity links).

Who said a memory is the person linked to it with the role "speaker" (what
memories.retrieval.speakers reads): the one the agent names with the write (`speaker`, given
here as an entity with "speaker": true) or else the one the extractor finds in the text's
shape ("Caroline: ...", "Caroline said: ..."). A speaker the agent names overrides the text's:
the person the text opens with is then only mentioned. docs/adr/0047 has the decision.

A batch resolves all its mentions with a handful of statements whatever its size.
"""

from __future__ import annotations

from collections import Counter, defaultdict

from django.db.models import F
from django.utils import timezone

from memories.models import Entity, EntityAlias, Memory, MemoryEntity
from memories.understanding.entities import Mention, extract, first_name_of, name_key, nickname_of


def given_mentions(given: list[dict] | None) -> list[Mention]:
    """The entities an agent named with a write: {"name", "type", "aliases"?, "speaker"?}."""
    return [Mention(item["name"], item.get("type") or "person", item["name"], speaker=bool(item.get("speaker")))
            for item in given or []]


def speaker_given(speaker: str | None) -> list[dict]:
    """A write's `speaker` as an entity the agent names: the person, in the role of speaker."""
    return [{"name": speaker, "type": "person", "speaker": True}] if speaker else []


def speakers_of(org_id, memory_ids) -> dict:
    """Who said each of these memories (the name of the person linked as speaker), by memory id;
    a memory nobody is linked to as speaker is absent. One statement."""
    links = MemoryEntity.objects.filter(org_id=org_id, memory_id__in=list(memory_ids), role="speaker",
                                        entity__org_id=org_id).order_by("memory_id", "source", "created_at")
    found = {}
    for memory_id, name in links.values_list("memory_id", "entity__name"):
        found.setdefault(memory_id, name)
    return found


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
            longer = [person for person in people if nickname_of(mention.key, person.key)
                      or first_name_of(mention.key, person.key)]
            shorter = [person for person in people if nickname_of(person.key, mention.key)]
            if len(longer) == 1 and not shorter:  # "Mel", Melanie known: Melanie
                entity = longer[0]
                new_aliases.append((entity, mention.name))
            elif len(shorter) == 1 and not longer and not mention.known_only:  # "Melanie", Mel known
                entity = shorter[0]
                new_aliases.append((entity, entity.name))
                Entity.objects.filter(pk=entity.pk).update(name=mention.name, key=mention.key)
                entity.name, entity.key = mention.name, mention.key
        if entity is None and (mention.kind == "person" or mention.guessed) and " " in mention.key:
            # "Bob Smith", and "Bob" alone is known: the same person, when no other Bob is
            if people is None:
                people = list(Entity.objects.filter(org_id=org_id, namespace=namespace, kind="person"))
            alone = [person for person in people if first_name_of(person.key, mention.key)]
            namesakes = [person for person in people if person.key != mention.key
                         and " " in person.key and person.key.split()[0] == mention.key.split()[0]]
            if len(alone) == 1 and not namesakes:
                entity = alone[0]
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


def link_entities(org_id, memories: list[Memory], given: dict | None = None, *,
                  live_only: bool = True) -> list[MemoryEntity]:
    """Link the new live memories among `memories` (all of them: live_only=False) to the
    entities they mention, inside the caller's transaction. given: memory pk -> the entities
    the agent named with it."""
    given = given or {}
    live = [memory for memory in memories if memory.is_live or not live_only]
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
    spoken_by_agent = set()  # memories whose speaker the agent named (kept through an edit)
    for memory_id, entity_id, role, source in MemoryEntity.objects.filter(org_id=org_id, memory__in=live).values_list(
            "memory_id", "entity_id", "role", "source"):
        linked[memory_id].add(entity_id)
        if role == "speaker" and source == "agent":
            spoken_by_agent.add(memory_id)
    links, counts, promoted = [], Counter(), []
    for memory in live:
        seen = linked[memory.pk]
        # The speaker the agent names wins over the one the text's shape shows.
        named = [(mention.kind, mention.key) for mention, source in sourced[memory.pk]
                 if mention.speaker and source == "agent"]
        if named or memory.pk in spoken_by_agent:
            speakers = set(named)
        else:
            speakers = {(mention.kind, mention.key) for mention in mentions_of[memory.pk] if mention.speaker}
        for mention, source in sourced[memory.pk]:
            entity = resolved[memory.namespace].get((mention.kind, mention.key))
            if entity is not None and entity.pk in seen and source == "agent" and mention.speaker:
                promoted.append((memory.pk, entity.pk))  # linked already (the agent named them): now the speaker
            if entity is None or entity.pk in seen:
                continue
            seen.add(entity.pk)
            counts[entity.pk] += 1
            role = "speaker" if (mention.kind, mention.key) in speakers and entity.kind == "person" else "mentioned"
            links.append(MemoryEntity(org_id=org_id, memory=memory, entity=entity, mention=mention.text[:256],
                                      source=source, role=role))
    by_increment = defaultdict(list)
    for entity_id, count in counts.items():
        by_increment[count].append(entity_id)
    now = timezone.now()
    for count, entity_ids in by_increment.items():
        Entity.objects.filter(pk__in=entity_ids, org_id=org_id).update(mention_count=F("mention_count") + count,
                                                                           last_seen_at=now)
    for memory_id, entity_id in promoted:
        MemoryEntity.objects.filter(org_id=org_id, memory_id=memory_id, entity_id=entity_id).update(role="speaker")
    return MemoryEntity.objects.bulk_create(links, ignore_conflicts=True)


def named_speaker(org_id, memory_id) -> str | None:
    """The speaker the agent named for a memory (not one the text's shape showed), by name."""
    return (MemoryEntity.objects.filter(org_id=org_id, memory_id=memory_id, role="speaker", source="agent",
                                        entity__org_id=org_id).values_list("entity__name", flat=True).first())


UNCHANGED = object()


def relink_entities(org_id, memory: Memory, speaker=UNCHANGED) -> list[MemoryEntity]:
    """After an edit of a memory's content, namespace or speaker: the extractor's links are
    found again (those the agent named stay while the namespace does). speaker: the person the
    agent now says said it, or None for nobody named (then the text's shape may show one);
    UNCHANGED keeps the one the agent named before."""
    stale = MemoryEntity.objects.filter(org_id=org_id, memory=memory)
    kept = stale.filter(source="agent", entity__namespace=memory.namespace)
    if speaker is not UNCHANGED:
        kept = kept.exclude(role="speaker")
    stale.exclude(entity_id__in=list(kept.values_list("entity_id", flat=True))).delete()
    given = speaker_given(speaker) if speaker is not UNCHANGED else []
    # An archived or superseded memory keeps its links as a live one does (they were made when
    # it was live, and stay): an edit of it finds them again too.
    return link_entities(org_id, [memory], {memory.pk: given} if given else None, live_only=False)
