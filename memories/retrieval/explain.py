"""Why a memory is what it is and ranks where it does (spec §4's explain_fact): its strength
and what drives it, the parts of the final ranking it brings to any search besides its
relevance, its history, its provenance, the relationships and entities around it, and the
searches that returned it."""

from __future__ import annotations

from dataclasses import dataclass, field
from django.db.models import Q
from django.utils import timezone

from memories.access import EVERYWHERE, KeyReach
from memories.lifecycle import strength
from memories.models import Memory, MemoryEntity, MemoryRelationship, MemoryVersion, Provenance, RetrievalEvent
from memories.retrieval import ranking
from memory_platform.config import config

RETRIEVALS_SHOWN = 10


@dataclass
class Explanation:
    memory: Memory
    strength: dict
    ranking: dict
    versions: list
    relationships: list
    entities: list
    provenance: list
    retrievals: list | None = field(default=None)  # None: the caller may not read retrieval events


# A memory returned by at most this many searches (its retrieval count: each search that returned
# it counted once) has its events found through the index of returned ids, all of them, the latest
# then kept; one returned more often, by walking the organisation's events from the latest until
# enough hold it, which stops soon. Left to choose, the planner walked all 125,000 events of a 1M
# organisation for a memory three searches had returned (benchmarks/scale, 42 -> 232 ms).
FEW_RETRIEVALS = 1_000


def _returned_by(org_id, memory: Memory) -> list[RetrievalEvent]:
    """The latest RETRIEVALS_SHOWN searches that returned the memory, the latest first."""
    holding = RetrievalEvent.objects.filter(org_id=org_id, returned_memory_ids__contains=[memory.pk])
    if memory.retrieval_count > FEW_RETRIEVALS:
        return list(holding.order_by("-created_at")[:RETRIEVALS_SHOWN])
    latest = sorted(holding.values_list("created_at", "id"), reverse=True)[:RETRIEVALS_SHOWN]
    return list(RetrievalEvent.objects.filter(org_id=org_id, pk__in=[pk for _, pk in latest]).order_by("-created_at"))


def memory_explain(*, org_id, memory: Memory, reach: KeyReach = EVERYWHERE, with_retrievals: bool = True) -> Explanation:
    """Explain a memory the caller may read (memory: as memories.reads.selectors.memory_get loads it)."""
    now = timezone.now()
    since = strength.last_reinforced(memory.created_at, memory.reinforced_at, memory.last_retrieved_at)
    threshold = config().decay_threshold
    weights = config().search.ranking_weights
    parts = ranking.standing(memory, now)
    held = parts["strength"]
    relationships = (MemoryRelationship.objects.filter(reach.memories("source__"), reach.memories("target__"),
                                                       Q(source_id=memory.pk) | Q(target_id=memory.pk), org_id=org_id)
                     .order_by("created_at"))
    retrievals = None
    if with_retrievals:
        events = _returned_by(org_id, memory)
        retrievals = [{"event_id": event.pk, "kind": event.kind, "query": event.query,
                       "rank": event.returned_memory_ids.index(memory.pk) + 1,
                       "score": event.returned_scores[event.returned_memory_ids.index(memory.pk)],
                       "created_at": event.created_at} for event in events]
    return Explanation(
        memory=memory,
        strength={"value": round(held, 4), "decay_rate": memory.decay_rate, "is_protected": memory.is_protected,
                  "importance": float(memory.importance), "retrieval_count": memory.retrieval_count,
                  "last_reinforced_at": since, "threshold": threshold,
                  "archived_after": strength.fades_at(memory, threshold) if memory.is_live else None},
        ranking={"weights": dict(weights), "parts": {name: round(value, 6) for name, value in parts.items()},
                 "without_relevance": round(sum(weights[name] * value for name, value in parts.items()), 6)},
        versions=list(MemoryVersion.objects.filter(org_id=org_id, memory_id=memory.pk).order_by("version_num")
                      .values("version_num", "operation", "status", "changed_by_type", "change_reason",
                              "created_at")),
        relationships=[{"id": r.pk, "direction": "outgoing" if r.source_id == memory.pk else "incoming",
                        "relation_type": r.relation_type, "predicate": r.predicate,
                        "memory_id": r.target_id if r.source_id == memory.pk else r.source_id,
                        "confidence": float(r.confidence)} for r in relationships],
        entities=list(MemoryEntity.objects.filter(org_id=org_id, memory_id=memory.pk).order_by("entity__name")
                      .values("entity_id", "entity__name", "entity__kind", "mention", "role")),
        provenance=list(Provenance.objects.filter(org_id=org_id, memory_id=memory.pk).order_by("created_at")
                        .values("source_identity", "source_event", "details", "created_at")),
        retrievals=retrievals,
    )
