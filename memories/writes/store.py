"""Seed 003's namespace store: items addressed by (namespace, key), written by upsert."""

from __future__ import annotations

from django.db import transaction

from memories.errors import Conflict
from memories.models import Memory
from memories.writes.change import memory_update
from memories.writes.create import WriteResult, memory_create
from memories.writes.kernel import Actor


def store_put(*, org_id, agent_id, scope: str, key: str, content: str, metadata: dict | None = None,
              category: str = Memory.Category.FACTUAL, actor: Actor | None = None,
              ttl: int | None = None) -> WriteResult:
    """Upsert by namespace and key: last write wins, and every write leaves a version. ttl: a
    time to live in seconds (None: the item does not expire, and loses one it had)."""
    actor = actor or Actor(agent_id=agent_id)
    with transaction.atomic():
        current = (Memory.objects.select_for_update()
                   .filter(org_id=org_id, scope=scope, key=key, deleted_at__isnull=True).first())
        if current is None:
            try:
                with transaction.atomic():
                    return memory_create(org_id=org_id, agent_id=agent_id, content=content, scope=scope, key=key,
                                         metadata=metadata or {}, category=category, actor=actor, ttl=ttl)
            except Conflict:
                # A concurrent first put of the same key won; this write comes last, so it wins.
                current = Memory.objects.select_for_update().get(org_id=org_id, scope=scope, key=key,
                                                                deleted_at__isnull=True)
        changes = {"content": content, "metadata": metadata or {},
                   **({"ttl": ttl} if ttl is not None else {"expires_at": None})}
        memory = memory_update(org_id=org_id, memory_id=current.pk, changes=changes,
                               expected_version=current.version, actor=actor)
        return WriteResult(memory, created=False)
