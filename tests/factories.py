"""Rows for tests, written through the runtime role inside the owning tenant's context."""

from __future__ import annotations

import random
import uuid
from dataclasses import dataclass
from itertools import count

from django.contrib.auth import get_user_model
from django.db import connection
from django.utils import timezone

from memories.models import (
    EMBEDDING_DIMENSIONS,
    Artifact,
    DuplicateCandidate,
    Entity,
    EntityAlias,
    Erasure,
    IdempotencyRecord,
    LifecycleRun,
    Memory,
    MemoryArtifact,
    MemoryEmbedding,
    MemoryEntity,
    MemoryRelationship,
    MemoryTag,
    MemoryUsage,
    MemoryVersion,
    Provenance,
    RetrievalEvent,
)
from memories.vectors.embeddings import text_hash
from memories.writes.kernel import content_hash
from memory_platform import database
from tenants import services
from tenants.context import service_account, tenant_context
from tenants.models import Agent, ApiKey, Membership, Organization, Session

_sequence = count(1)


def organization(name: str, *, beside: Organization | None = None) -> Organization:
    """A new organisation; beside another, its rows go to that one's shard on a Citus cluster
    (ids are drawn until Citus hashes one there), so a worker plans its statements over the
    same rows as one PostgreSQL, where every organisation shares each table."""
    slug = f"{name.lower().replace(' ', '-')}-{next(_sequence)}"
    with service_account():
        if beside is None or not database.on_citus():
            return services.organization_create(name=name, slug=slug)
        return Organization.objects.create(id=_id_in_shard_of(beside.id), name=name, slug=slug)


def _id_in_shard_of(org_id) -> uuid.UUID:
    with connection.cursor() as cursor:
        cursor.execute("""
            SELECT drawn FROM (SELECT gen_random_uuid() AS drawn FROM generate_series(1, 10000)) candidates
            WHERE get_shard_id_for_distribution_column('memories', drawn)
                = get_shard_id_for_distribution_column('memories', %s::uuid)
            LIMIT 1
        """, [str(org_id)])
        return cursor.fetchone()[0]


def agent(*, org: Organization, name: str) -> Agent:
    with tenant_context(org.id):
        return services.agent_create(org=org, name=name)


def api_key(*, agent: Agent, name: str = "test key", **reach) -> tuple[ApiKey, str]:
    """A key of the agent, and the key itself; reach: namespaces=..., read_only=..."""
    with tenant_context(agent.org_id):
        return services.api_key_issue(agent=agent, name=name, **reach)


def unit_vector(seed: int, dimensions: int = EMBEDDING_DIMENSIONS) -> list[float]:
    rng = random.Random(seed)
    values = [rng.gauss(0, 1) for _ in range(dimensions)]
    norm = sum(v * v for v in values) ** 0.5
    return [v / norm for v in values]


def memory(*, org, agent, content: str, **fields) -> Memory:
    with tenant_context(org.id):
        embedding = fields.pop("embedding", unit_vector(next(_sequence)))
        return Memory.objects.create(
            org=org,
            agent=agent,
            content=content,
            content_hash=content_hash(content),
            category=fields.pop("category", Memory.Category.FACTUAL),
            embedding=embedding,
            embedding_model="all-MiniLM-L6-v2" if embedding is not None else "",
            embedding_dimensions=EMBEDDING_DIMENSIONS if embedding is not None else None,
            **fields,
        )


@dataclass
class Tenant:
    org: Organization
    agent: Agent
    session: Session
    api_key: ApiKey
    membership: Membership
    memory: Memory
    other_memory: Memory
    version: MemoryVersion
    relationship: MemoryRelationship
    tag: MemoryTag
    artifact: Artifact
    memory_artifact: MemoryArtifact
    retrieval_event: RetrievalEvent
    provenance: Provenance
    duplicate_candidate: DuplicateCandidate
    idempotency_record: IdempotencyRecord
    usage: MemoryUsage
    entity: Entity
    entity_alias: EntityAlias
    memory_entity: MemoryEntity
    erasure: Erasure
    lifecycle_run: LifecycleRun
    memory_embedding: MemoryEmbedding

    def rows(self) -> dict[type, object]:
        """One row of every tenant table, by model."""
        return {type(row): row for row in vars(self).values()}


def populated_tenant(org: Organization) -> Tenant:
    """An organisation with at least one row in every tenant table."""
    n = next(_sequence)
    agent_row = agent(org=org, name=f"agent-{n}")
    key_row, _ = api_key(agent=agent_row)
    user = get_user_model().objects.create_user(username=f"operator-{n}", password="not-used-here")
    with tenant_context(org.id):
        session = Session.objects.create(org=org, agent=agent_row, namespace="memories/user-1")
        membership = Membership.objects.create(org=org, user=user, role=Membership.Role.OPERATOR)
        first = memory(org=org, agent=agent_row, session=session, namespace="memories/user-1",
                       content=f"{org.name} prefers tea over coffee")
        second = memory(org=org, agent=agent_row, namespace="memories/user-1", content=f"{org.name} works in Lisbon")
        version = MemoryVersion.objects.create(
            org=org, memory=first, version_num=1, operation="create", content=first.content,
            category=first.category, confidence=first.confidence, status=first.status,
            changed_by_type="agent", changed_by_agent=agent_row,
        )
        relationship = MemoryRelationship.objects.create(
            org=org, source=second, target=first, relation_type="supports"
        )
        tag = MemoryTag.objects.create(org=org, memory=first, tag="drinks")
        artifact = Artifact.objects.create(
            org=org, namespace="memories/user-1", sha256="a" * 64, storage_uri="s3://bucket/doc", artifact_type="document"
        )
        link = MemoryArtifact.objects.create(org=org, memory=first, artifact=artifact, namespace="memories/user-1")
        event = RetrievalEvent.objects.create(
            org=org, kind="search", agent=agent_row, query="what does the user drink?",
            returned_memory_ids=[first.id], returned_scores=[0.9], returned_artifact_ids=[artifact.id],
        )
        provenance = Provenance.objects.create(org=org, memory=first, source_identity="chat", source_event="turn-1")
        duplicate = DuplicateCandidate.objects.create(org=org, memory=second, candidate=first, similarity=0.95)
        idempotency = IdempotencyRecord.objects.create(
            org=org, agent=agent_row, key=f"key-{n}", request_fingerprint="f" * 64, response_status=201, response_body={}
        )
        usage = MemoryUsage.objects.create(org=org, memory=second)
        lisbon = Entity.objects.create(org=org, namespace="memories/user-1", kind="place", name="Lisbon", key="lisbon",
                                       mention_count=1)
        alias = EntityAlias.objects.create(org=org, entity=lisbon, alias="Lisboa", key="lisboa")
        mention = MemoryEntity.objects.create(org=org, memory=second, entity=lisbon, mention="Lisbon")
        erasure = Erasure.objects.create(org=org, scope={"namespace": "memories/user-0"}, counts={"memories": 1},
                                         requested_by_agent=agent_row, via="api")
        lifecycle_run = LifecycleRun.objects.create(org=org, job="decay", started_at=timezone.now(),
                                                    counts={"decaying": 0, "fading": 0, "archived": 0})
        # A vector by another model than the active one, kept (memories.lifecycle.reembed).
        memory_embedding = MemoryEmbedding.objects.create(
            org=org, memory=first, model="an-earlier-model", embedding=unit_vector(n),
            text_hash=text_hash(first.content), embedded_at=timezone.now())
    return Tenant(
        org=org, agent=agent_row, session=session, api_key=key_row, membership=membership, memory=first,
        other_memory=second, version=version, relationship=relationship, tag=tag, artifact=artifact,
        memory_artifact=link, retrieval_event=event, provenance=provenance, duplicate_candidate=duplicate,
        idempotency_record=idempotency, usage=usage, entity=lisbon, entity_alias=alias, memory_entity=mention,
        erasure=erasure, lifecycle_run=lifecycle_run, memory_embedding=memory_embedding,
    )
