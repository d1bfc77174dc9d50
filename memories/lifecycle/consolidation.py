"""A closed session's consolidation (spec §4's "consolidate pending sessions"), without a
language model: it proposes, people decide in the console.

For each agent and namespace the session's live memories lie in (a namespace is one end
user's: nothing is compared or summarised across two):
  * near-duplicates: each pair whose cosine similarity reaches CONSOLIDATION_SIMILARITY is
    recorded as a DuplicateCandidate, the conflict queue's merge proposal (keep one, merge
    both, or both valid); pairs already recorded, by the write path or before, stay once;
  * a summary candidate, from SUMMARY_MIN memories on: the few that together cover the
    session best (maximal marginal relevance around the centroid of their embeddings, leaving
    out near-duplicates of one already chosen), in the order they were written, as one memory
    waiting for review (status pending_review) with a derived_from edge to each of them.

Memories still waiting for their embedding are embedded first. The session is marked
consolidated in the same transaction, so a second run does nothing, and the run is recorded
(LifecycleRun). Closing a session queues its consolidation; the sweep (every ten minutes)
runs it for a session closed recently whose job was lost (Redis out of reach at the close).
"""

from __future__ import annotations

import logging
from datetime import timedelta

import numpy as np
from django.db import transaction
from django.utils import timezone

from memories import jobs
from memories.models import (
    CONTENT_MAX_CHARS,
    LIVE,
    DuplicateCandidate,
    LifecycleRun,
    Memory,
    MemoryRelationship,
    MemoryVersion,
)
from memories.writes.create import insert_memory
from memories.writes.kernel import Actor
from memory_platform.config import config
from tenants.context import service_account, tenant_job
from tenants.models import Session

logger = logging.getLogger(__name__)

QUEUE = "maintenance"
SUMMARY_MIN = 3  # memories of one agent and namespace in the session before a summary is proposed
SUMMARY_SIZE = 6  # at most this many of them make the summary
RELEVANCE = 0.7  # maximal marginal relevance: weight of covering the session against repeating a choice
PIECE_CHARS = 400  # each chosen memory is cut to this many characters in the summary
MOST_MEMORIES = 5000  # a session's memories weighed, the first written
MOST_PAIRS = 100  # merge proposals per agent and namespace, the closest pairs
SUMMARY_TAG = "session-summary"
SWEEP_WITHIN = timedelta(days=2)  # the sweep's reach back: sessions closed since
SWEEP_AFTER = timedelta(minutes=5)  # ... and at least this long ago (the queued job goes first)


def enqueue(org_id, session_id) -> None:
    """After commit, ask a worker to consolidate the session. If Redis is out of reach the
    close still stands and the sweep consolidates it."""

    def send():
        import django_rq

        try:
            django_rq.get_queue(QUEUE).enqueue(consolidate_session, org_id=str(org_id), session_id=str(session_id),
                                               job_timeout=1800)
        except Exception as exc:  # Redis unreachable, or any queue failure: the sweep runs it
            logger.warning("consolidation of a session not enqueued (%s); the sweep will run it", type(exc).__name__)

    transaction.on_commit(send)


@tenant_job
def consolidate_session(*, org_id, session_id) -> dict | None:
    """Consolidate a closed session once. Returns what it proposed (None if there was nothing
    to do: the session is open, gone, consolidated already, or another run holds it)."""
    session = (Session.objects.select_for_update(skip_locked=True)
               .filter(org_id=org_id, pk=session_id, ended_at__isnull=False, consolidated_at__isnull=True).first())
    if session is None:
        return None
    started = timezone.now()
    live = Memory.objects.without_usage().filter(LIVE, org_id=org_id, session_id=session.pk)
    pending = list(live.filter(embedding__isnull=True).order_by("created_at").values_list("pk", flat=True)
                   [:MOST_MEMORIES])
    embedded = jobs.embed_now(org_id, pending) if pending else 0
    memories = list(live.filter(embedding__isnull=False).order_by("created_at", "id")
                    .only("id", "agent_id", "namespace", "content", "created_at", "embedding")[:MOST_MEMORIES])
    groups: dict[tuple, list[Memory]] = {}
    for memory in memories:
        groups.setdefault((memory.agent_id, memory.namespace), []).append(memory)
    counts = {"session": str(session.pk), "memories": len(memories), "embedded": embedded, "duplicate_pairs": 0,
              "summaries": 0}
    for (agent_id, namespace), group in groups.items():
        vectors = unit_rows(np.array([memory.embedding for memory in group], dtype=np.float32))
        counts["duplicate_pairs"] += propose_merges(org_id, group, vectors)
        if len(group) >= SUMMARY_MIN:
            counts["summaries"] += propose_summary(org_id, session, agent_id, namespace, group, vectors)
    session.consolidated_at, session.consolidation = timezone.now(), counts
    session.save(update_fields=["consolidated_at", "consolidation"])
    LifecycleRun.objects.create(org_id=org_id, job=LifecycleRun.Job.CONSOLIDATION, started_at=started, counts=counts)
    return counts


def unit_rows(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.where(norms == 0, 1, norms)


def close_pairs(vectors: np.ndarray, threshold: float, most: int) -> list[tuple[int, int, float]]:
    """The pairs (earlier, later, similarity) at or above threshold, the closest first."""
    similarity = vectors @ vectors.T
    earlier, later = np.nonzero(np.triu(similarity >= threshold, k=1))
    pairs = sorted(((int(i), int(j), float(similarity[i, j])) for i, j in zip(earlier, later)),
                   key=lambda pair: (-pair[2], pair[0], pair[1]))
    return pairs[:most]


def propose_merges(org_id, group: list[Memory], vectors: np.ndarray) -> int:
    """Record the group's close pairs not recorded already (either way round). Returns how
    many are new."""
    pairs = close_pairs(vectors, config().consolidation_similarity, MOST_PAIRS)
    if not pairs:
        return 0
    ids = [memory.pk for memory in group]
    known = set(DuplicateCandidate.objects.filter(org_id=org_id, memory_id__in=ids, candidate_id__in=ids)
                .values_list("memory_id", "candidate_id"))
    known |= {(b, a) for a, b in known}
    new = [DuplicateCandidate(org_id=org_id, memory_id=group[j].pk, candidate_id=group[i].pk,
                              similarity=round(min(similarity, 1.0), 6))
           for i, j, similarity in pairs if (group[j].pk, group[i].pk) not in known]
    DuplicateCandidate.objects.bulk_create(new, ignore_conflicts=True)
    return len(new)


def summary_choice(vectors: np.ndarray, size: int, redundant: float) -> list[int]:
    """Which rows cover the group best: maximal marginal relevance around the centroid, never
    a row at or above `redundant` to one already chosen."""
    centroid = vectors.mean(axis=0)
    centroid /= np.linalg.norm(centroid) or 1
    relevance = vectors @ centroid
    closest_chosen = np.full(len(vectors), -1.0)
    chosen: list[int] = []
    while len(chosen) < size:
        score = RELEVANCE * relevance - (1 - RELEVANCE) * np.maximum(closest_chosen, 0)
        score[closest_chosen >= redundant] = -np.inf
        score[chosen] = -np.inf
        best = int(np.argmax(score))
        if score[best] == -np.inf:
            break
        chosen.append(best)
        closest_chosen = np.maximum(closest_chosen, vectors @ vectors[best])
    return sorted(chosen)


def shortened(text: str, most: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= most else text[:most - 1].rstrip() + "…"


def summary_text(session: Session, group: list[Memory], chosen: list[Memory]) -> str:
    first, last = group[0].created_at, group[-1].created_at
    when = f"{first:%Y-%m-%d %H:%M}" + (f" to {last:%Y-%m-%d %H:%M}" if last - first >= timedelta(minutes=1) else "")
    label = f"Session {session.external_id}" if session.external_id else "Session"
    lines = [f"{label}, {when} UTC: {len(group)} memories; the main points:"]
    lines += [f"- {shortened(memory.content, PIECE_CHARS)}" for memory in chosen]
    return "\n".join(lines)[:CONTENT_MAX_CHARS]


def propose_summary(org_id, session: Session, agent_id, namespace: str, group: list[Memory],
                    vectors: np.ndarray) -> int:
    """Write the group's summary candidate, waiting for review, linked to what it was drawn
    from. Returns 1 if it is new (an equal summary is not written twice)."""
    chosen = [group[i] for i in summary_choice(vectors, SUMMARY_SIZE, config().consolidation_similarity)]
    fields = {
        "namespace": namespace, "session_id": session.pk, "category": Memory.Category.EPISODIC,
        "memory_type": Memory.MemoryType.EPISODIC, "source": Memory.Source.INFERRED,
        "status": Memory.Status.PENDING_REVIEW,
        "metadata": {"session_summary": {"session_id": str(session.pk), "memories": len(group),
                                         "chosen": len(chosen)}},
        "provenance": {"source_identity": "session consolidation", "source_event": f"session {session.pk} closed"},
    }
    actor = Actor(changed_by_type=MemoryVersion.ChangedByType.SYSTEM,
                  reason=f"summary of session {session.pk}, proposed for review")
    result = insert_memory(org_id, agent_id, summary_text(session, group, chosen), fields, [SUMMARY_TAG], actor)
    if not result.created:
        return 0
    MemoryRelationship.objects.bulk_create([
        MemoryRelationship(org_id=org_id, source_id=result.memory.pk, target_id=memory.pk,
                           relation_type=MemoryRelationship.RelationType.DERIVED_FROM, predicate="summarises",
                           confidence=1)
        for memory in chosen], ignore_conflicts=True)
    return 1


def consolidate_pending() -> int:
    """The sweep (memories.cron): consolidate each session closed within SWEEP_WITHIN, and
    more than SWEEP_AFTER ago, that has not been. Returns how many it consolidated."""
    now = timezone.now()
    with service_account(), transaction.atomic():
        waiting = list(Session.objects.filter(ended_at__gte=now - SWEEP_WITHIN, ended_at__lt=now - SWEEP_AFTER,
                                              consolidated_at__isnull=True)
                       .order_by("ended_at").values_list("org_id", "pk")[:500])
    done = sum(consolidate_session(org_id=org_id, session_id=session_id) is not None
               for org_id, session_id in waiting)
    if done:
        logger.info("consolidated %d sessions whose job had not run", done)
    return done
