"""Background work: embedding memories that were stored without one, or with a vector of a
model that is no longer the active one (written across a switch, memories.lifecycle.reembed).

Jobs take ids plus org_id, re-enter the tenant context and are idempotent: a memory that
already has its embedding is skipped, so running a job twice leaves the same state as once.
"""

from __future__ import annotations

import logging
import time
from datetime import timedelta

from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone

from memories.models import EMBEDDING_DIMENSIONS, EMBEDDING_PENDING, IdempotencyRecord, Memory
from memories.vectors.embeddings import (
    active_standing,
    embed_contents,
    forget_active_model,
    get_embedder,
    vector_literal,
)
from memories.writes.duplicates import near_duplicates, record_duplicates
from tenants.context import service_account, tenant_job

logger = logging.getLogger(__name__)

QUEUE = "embeddings"
SWEEP_BATCH = 256


def enqueue_embedding(*, org_id: str, memory_ids: list[str]) -> None:
    import django_rq

    django_rq.get_queue(QUEUE).enqueue(embed_memories, org_id=org_id, memory_ids=memory_ids,
                                       job_timeout=600, retry=None)


def of_another_model(model: str) -> Q:
    """Memories holding a vector of another model than `model`, deleted ones too (a restored
    memory then has a vector searches can compare), by the memories_vector_model index, whose
    condition is exactly this one's (two ranges of it; "<>" would read the whole table)."""
    return Q(embedding__isnull=False) & (Q(embedding_model__lt=model) | Q(embedding_model__gt=model))


def claim_pending(org_id: str, memory_ids: list[str], model: str | None = None) -> list[Memory]:
    """The listed memories that still lack an embedding of `model` (default: the active
    model's; none at all, or one of another model), locked until the transaction ends;
    those another job holds are skipped. The lock is FOR NO KEY UPDATE: the job changes no
    key, so a write that links a new memory to one of these (the foreign key's KEY SHARE,
    e.g. the timeline's edge from the episode before) goes on while the model runs, instead
    of waiting seconds for it."""
    model = model or get_embedder().model_name
    return list(
        Memory.objects.select_for_update(skip_locked=True, no_key=True)
        .filter(EMBEDDING_PENDING | of_another_model(model), org_id=org_id, pk__in=memory_ids)
        .only("id", "content").order_by("created_at")
    )


@tenant_job
def embed_memories(*, org_id: str, memory_ids: list[str]) -> int:
    """Embed the listed memories of one organisation that still lack an embedding (of the
    active model); record their near-duplicates. Returns how many were embedded."""
    return embed_now(org_id, memory_ids)


def embed_now(org_id, memory_ids: list) -> int:
    """embed_memories inside the caller's tenant context and transaction (a job that needs
    these vectors before it goes on: a session's consolidation)."""
    embedder = get_embedder()
    pending = claim_pending(org_id, [str(memory_id) for memory_id in memory_ids], embedder.model_name)
    if not pending:
        return 0
    started = time.perf_counter()
    vectors = embed_contents(embedder, [memory.content for memory in pending])
    embedded = time.perf_counter()
    with connection.cursor() as cursor:
        # One statement for the whole batch (Django's bulk_update would repeat every
        # vector inside a CASE expression).
        cursor.execute(
            """
            UPDATE memories SET embedding = batch.embedding::vector, embedding_model = %s,
                   embedding_dimensions = %s, embedded_at = now()
            FROM unnest(%s::uuid[], %s::text[]) AS batch(id, embedding)
            WHERE memories.org_id = %s AND memories.id = batch.id AND memories.indexed
              AND (memories.embedding IS NULL OR memories.embedding_model <> %s)
            """,
            [embedder.model_name, EMBEDDING_DIMENSIONS, [str(m.pk) for m in pending],
             [vector_literal(vector) for vector in vectors], org_id, embedder.model_name],
        )
    record_duplicates(org_id, near_duplicates(org_id, [memory.pk for memory in pending]))
    stored = time.perf_counter()
    logger.info("embedded %d memories: model %.0f ms, database %.0f ms", len(pending),
                (embedded - started) * 1000, (stored - embedded) * 1000)
    return len(pending)


def embed_pending(*, batch_size: int = SWEEP_BATCH) -> int:
    """The sweep: embed every pending memory of every organisation, then every one holding a
    vector of a model that is no longer the active one, a batch at a time. Run by the cron
    scheduler and by `manage.py embed_pending`. Returns how many were embedded."""
    total = 0
    forget_active_model()  # read afresh: the sweep a switch queues must embed with the new model
    while True:
        model = get_embedder().model_name
        with service_account(), transaction.atomic():
            batch = list(
                Memory.objects.filter(EMBEDDING_PENDING).order_by("created_at").values_list("org_id", "pk")[:batch_size]
            )
            if len(batch) < batch_size:
                # While a switch moves vectors, those it moved are the next model's, not stale
                # (memories.lifecycle.reembed): the switch itself handles what changes meanwhile.
                moving = active_standing()[1]
                stale = Memory.objects.filter(of_another_model(model))
                if moving:
                    stale = stale.exclude(embedding_model=moving)
                batch += stale.values_list("org_id", "pk")[:batch_size - len(batch)]
        if not batch:
            return total
        by_org: dict = {}
        for org_id, memory_id in batch:
            by_org.setdefault(str(org_id), []).append(str(memory_id))
        embedded = sum(embed_memories(org_id=org_id, memory_ids=ids) for org_id, ids in by_org.items())
        total += embedded
        if embedded == 0:  # everything left is locked by a running job
            return total


IDEMPOTENCY_RETENTION_HOURS = 24


def purge_idempotency_records(*, older_than_hours: int = IDEMPOTENCY_RETENTION_HOURS) -> int:
    """Forget Idempotency-Keys after a day: a retry later than that is a new request."""
    cutoff = timezone.now() - timedelta(hours=older_than_hours)
    with service_account(), transaction.atomic():
        deleted, _ = IdempotencyRecord.objects.filter(created_at__lt=cutoff).delete()
    return deleted
