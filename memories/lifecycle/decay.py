"""Decay (spec §4): what is fading, and the nightly job that archives what has faded.

A memory's strength (memories.lifecycle.strength) falls with the time since it was last retrieved or
changed, slower the more it was retrieved and the more important it is; confirmed (protected)
memories and, by default, episodes keep strength 1. The nightly job archives every live memory
whose strength fell below DECAY_THRESHOLD (spec §4: 0.05), never deletes one, and writes a
version saying why; unarchiving it (console, or a restore) starts its clock again. The job is
idempotent: strength is computed, not stored, so a second run finds nothing more to do.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime

from django.db import connection, transaction
from django.db.models import Prefetch, Q
from django.utils import timezone

from memories.access import EVERYWHERE, KeyReach
from memories.caching import cache
from memories.lifecycle import strength
from memories.models import LIVE, LifecycleRun, Memory, MemoryTag, MemoryVersion, live_sql
from memories.retrieval.filters import SearchFilters
from memories.retrieval.ranking import usage_join
from memories.writes.kernel import Actor, version_row
from memory_platform.config import config
from memory_platform.database import HASH_OR_MERGE_JOINS, local_settings
from tenants.context import service_account, tenant_job
from tenants.models import Organization

logger = logging.getLogger(__name__)

BATCH = 1000  # memories archived per statement

# The live memories that decay, with their strength now: the weak list and the job read this.
# A part of an organisation (a namespace, a key's reach, the ids kept with the bands) reads each
# memory's usage by its key, one index probe a memory (ranking.usage_join); the whole
# organisation joins them by hash or merge (HASH_OR_MERGE_JOINS): a probe a memory took 3.4 times
# as long at 200,000 memories. Either way no estimate makes it quadratic: statistics that had
# not seen an organisation yet (an import just committed) once made the plain join re-read the
# organisation's usage for every memory, past 12 minutes at 1M (docs/adr/0045).
DECAYING_SQL = f"""
    SELECT m.id, {strength.strength_sql("m", "u")} AS strength
    FROM memories m
    {{usage}}
    WHERE m.org_id = %s AND {live_sql("m")}
      AND m.decay_rate > 0 AND (m.expires_at IS NULL OR m.expires_at > now())
"""
ORGANISATION_DECAYING_SQL = DECAYING_SQL.format(
    usage="LEFT JOIN memory_usage u ON u.org_id = m.org_id AND u.memory_id = m.id")


def decaying(org_id, narrowed: str = "", params: list | tuple = ()) -> tuple[str, list]:
    """The statement of the organisation's decaying memories, narrowed by these conditions
    (" AND ...", narrowing's) or whole, and its parameters."""
    if narrowed:
        return DECAYING_SQL.format(usage=usage_join("m")) + narrowed, [org_id, org_id, *params]
    return ORGANISATION_DECAYING_SQL, [org_id]


def _read(statement: str, params: list, *, whole: bool) -> list[tuple]:
    """The statement's rows; over the whole organisation with HASH_OR_MERGE_JOINS."""
    with connection.cursor() as cursor:
        if not whole:
            cursor.execute(statement, params)
            return cursor.fetchall()
        with local_settings(cursor, HASH_OR_MERGE_JOINS):
            cursor.execute(statement, params)
            return cursor.fetchall()


def narrowing(namespace: str | None, reach: KeyReach) -> tuple[str, list]:
    """The conditions (" AND ...") that keep the decaying memories under a namespace prefix and within
    a key's reach, with their parameters."""
    conditions = SearchFilters(namespace=namespace, within=reach.namespaces).namespace_conditions("m.scope")
    return ("".join(f" AND {sql}" for sql, _ in conditions),
            [value for _, values in conditions for value in values])


def strength_bands(*, org_id, namespace: str | None = None, reach: KeyReach = EVERYWHERE) -> dict:
    """How many live decaying memories are strong (at least WEAK_STRENGTH), fading (down to the
    decay threshold) and faded (below it: the nightly job archives them)."""
    narrowed, params = narrowing(namespace, reach)
    statement, params = decaying(org_id, narrowed, params)
    [(strong, fading, faded)] = _read(f"""
        SELECT count(*) FILTER (WHERE strength >= %s), count(*) FILTER (WHERE strength < %s AND strength >= %s),
               count(*) FILTER (WHERE strength < %s)
        FROM ({statement}) decaying
    """, [config().weak_strength, config().weak_strength, config().decay_threshold, config().decay_threshold,
          *params], whole=not narrowed)
    return {"strong": strong, "fading": fading, "faded": faded}


@dataclass
class Fading:
    """A memory that is fading: how strongly it is held, and when the job will archive it if
    nobody retrieves, changes or confirms it first."""

    memory: Memory
    strength: float
    archived_after: datetime | None


def weak_memories(*, org_id, below: float | None = None, namespace: str | None = None, limit: int = 50,
                  offset: int = 0, reach: KeyReach = EVERYWHERE) -> tuple[list[Fading], int]:
    """Live memories whose strength is below `below` (default WEAK_STRENGTH), the weakest
    first, and how many there are: what will be archived unless it is used or confirmed."""
    below = config().weak_strength if below is None else below
    narrowed, params = narrowing(namespace, reach)
    statement, params = decaying(org_id, narrowed, params)
    rows = _read(f"""
        SELECT id, strength, count(*) OVER () FROM ({statement}) decaying
        WHERE strength < %s ORDER BY strength, id LIMIT %s OFFSET %s
    """, [*params, below, limit, offset], whole=not narrowed)
    total = rows[0][2] if rows else 0
    return _as_fading(org_id, [(memory_id, held) for memory_id, held, _ in rows]), total


def _as_fading(org_id, held: list[tuple]) -> list[Fading]:
    """(memory id, strength) as Fading, in this order, each memory read with its tags."""
    memories = Memory.objects.filter(org_id=org_id, pk__in=[memory_id for memory_id, _ in held]).prefetch_related(
        Prefetch("tags", queryset=MemoryTag.objects.filter(org_id=org_id)))
    by_id = {memory.pk: memory for memory in memories}
    threshold = config().decay_threshold
    return [Fading(by_id[memory_id], value, strength.fades_at(by_id[memory_id], threshold))
            for memory_id, value in held]


@dataclass
class WeakPage:
    """A page of the weak list and how many memories are weak. as_of: served from the weakest
    memories kept with the strength bands when they were last counted (count_bands), at their
    strength now; then the count is about."""

    fading: list[Fading]
    count: int
    as_of: datetime | None = None

    @property
    def label(self) -> dict:
        return {} if self.as_of is None else {"about": True, "as_of": self.as_of}


def weak_page(*, org_id, below: float | None = None, namespace: str | None = None, limit: int = 50,
              offset: int = 0, reach: KeyReach = EVERYWHERE) -> WeakPage:
    """The weak list as the API and MCP serve it. Over the whole organisation its first pages
    come from the weakest memories kept when the bands were last counted (every 10 minutes, and
    after an import), at their strength now: a read of at most WEAKEST_KEPT memories by their
    ids, whatever the organisation's size (issue 32; the scan sorts every live decaying memory).
    A memory retrieved, confirmed, changed, archived or erased since is listed as it is now
    (every change restarts a memory's clock, so none makes one weak); what it misses is a
    memory that fell below `below` by the mere passing of time since the count. A namespace, a
    key's reach, a page past those kept, or a count they cannot tell is answered by the scan,
    exactly (weak_memories)."""
    below = config().weak_strength if below is None else below
    if namespace is None and not reach.limited and below <= config().weak_strength:
        page = _weak_page_as_counted(org_id, below, limit, offset)
        if page is not None:
            return page
    fading, count = weak_memories(org_id=org_id, below=below, namespace=namespace, limit=limit, offset=offset,
                                  reach=reach)
    return WeakPage(fading, count)


def _weak_page_as_counted(org_id, below: float, limit: int, offset: int) -> WeakPage | None:
    """weak_page from the bands' kept weakest, or None when they cannot answer it."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT fading + faded, weakest, counted_at FROM memory_strength_bands WHERE org_id = %s",
                       [org_id])
        row = cursor.fetchone()
        if row is None:
            return None
        weak_then, kept, counted_at = row
        statement, params = decaying(org_id, " AND m.id = ANY(%s::uuid[])", [kept])
        cursor.execute(f"SELECT id, strength FROM ({statement}) decaying WHERE strength < %s ORDER BY strength, id",
                       [*params, below])
        weak_now = cursor.fetchall()
    if len(kept) < WEAKEST_KEPT:
        count = len(weak_now)  # every memory weak then was kept: these are the ones still weak
    elif offset + limit <= len(weak_now) and below == config().weak_strength:
        count = weak_then
    else:
        return None
    return WeakPage(_as_fading(org_id, weak_now[offset:offset + limit]), count, counted_at)


@dataclass
class Bands:
    """An organisation's strength bands and its weakest memories: as last counted (as_of) by
    `count_bands`, or counted now (as_of None) when they never were."""

    counts: dict  # strong, fading, faded
    as_of: datetime | None
    weakest: list[Fading]

    @property
    def label(self) -> dict:
        """What an answer says of them: "about", as of when, unless counted now."""
        return {} if self.as_of is None else {"about": True, "as_of": self.as_of}


def bands(*, org_id, weakest: int = 0) -> Bands:
    """The organisation's strength bands as last counted, and up to `weakest` of the weakest
    memories then (those still live, their strength now): one row read, whatever the
    organisation's size (docs/adr/0045). Counted now when they never were (a new organisation,
    before the job's first run)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT strong, fading, faded, weakest, counted_at FROM memory_strength_bands "
                       "WHERE org_id = %s", [org_id])
        row = cursor.fetchone()
    if row is None:
        return Bands(strength_bands(org_id=org_id), None,
                     weak_memories(org_id=org_id, limit=weakest)[0] if weakest else [])
    strong, fading, faded, ids, counted_at = row
    return Bands({"strong": strong, "fading": fading, "faded": faded}, counted_at,
                 _fading(org_id, ids[:weakest]) if weakest else [])


def _fading(org_id, ids: list) -> list[Fading]:
    """These memories, those still live, as Fading (their strength now), in this order."""
    now, threshold = timezone.now(), config().decay_threshold
    memories = {memory.pk: memory for memory in Memory.objects.filter(
        Q(expires_at__isnull=True) | Q(expires_at__gt=now), LIVE, org_id=org_id, pk__in=ids)}
    return [Fading(memories[memory_id], strength.of(memories[memory_id], now),
                   strength.fades_at(memories[memory_id], threshold)) for memory_id in ids if memory_id in memories]


# The weakest memories' ids kept with the bands, the weakest first: the dashboard shows 5, the
# organisation's weak list serves its first pages from them (weak_page).
WEAKEST_KEPT = 1000


@tenant_job
def count_organisation_bands(*, org_id) -> dict:
    """Count the organisation's strength bands now and keep them, with its weakest memories' ids:
    one read of the organisation (the bands' counts and the weakest come from the same rows)."""
    weak, threshold = config().weak_strength, config().decay_threshold
    [(strong, fading, faded, weakest)] = _read(f"""
        WITH decaying AS MATERIALIZED ({ORGANISATION_DECAYING_SQL})
        SELECT count(*) FILTER (WHERE strength >= %s), count(*) FILTER (WHERE strength < %s AND strength >= %s),
               count(*) FILTER (WHERE strength < %s),
               (SELECT coalesce(array_agg(id ORDER BY strength, id), '{{}}') FROM (
                   SELECT id, strength FROM decaying WHERE strength < %s ORDER BY strength, id LIMIT %s) weakest)
        FROM decaying
    """, [org_id, weak, weak, threshold, threshold, weak, WEAKEST_KEPT], whole=True)
    with connection.cursor() as cursor:
        cursor.execute("""
            INSERT INTO memory_strength_bands AS b (org_id, strong, fading, faded, weakest, counted_at)
            VALUES (%s, %s, %s, %s, %s::uuid[], now())
            ON CONFLICT (org_id) DO UPDATE SET strong = excluded.strong, fading = excluded.fading,
                faded = excluded.faded, weakest = excluded.weakest, counted_at = excluded.counted_at
        """, [org_id, strong, fading, faded, weakest])
    return {"strong": strong, "fading": fading, "faded": faded}


def count_bands() -> dict:
    """The periodic job (memories.cron, every 10 minutes): every organisation's strength bands
    counted and kept, each in its own transaction. Returns how many organisations."""
    with service_account():
        org_ids = list(Organization.objects.values_list("id", flat=True))
    for org_id in org_ids:
        count_organisation_bands(org_id=org_id)
    return {"organisations": len(org_ids)}


@tenant_job
def decay_organisation(*, org_id) -> dict:
    """Archive the organisation's live memories whose strength fell below DECAY_THRESHOLD, each
    with a version row saying why, and record the run (LifecycleRun). Returns its counts."""
    started = timezone.now()
    threshold, weak = config().decay_threshold, config().weak_strength
    [(decaying, fading, faded_ids, strengths)] = _read(f"""
        SELECT count(*), count(*) FILTER (WHERE strength < %s),
               coalesce(array_agg(id ORDER BY id) FILTER (WHERE strength < %s), '{{}}'),
               coalesce(array_agg(strength ORDER BY id) FILTER (WHERE strength < %s), '{{}}')
        FROM ({ORGANISATION_DECAYING_SQL}) decaying
    """, [weak, threshold, threshold, org_id], whole=True)
    held = dict(zip(faded_ids, strengths))
    archived = 0
    for start in range(0, len(faded_ids), BATCH):
        archived += _archive(org_id, faded_ids[start:start + BATCH], held, threshold)
    counts = {"decaying": decaying, "fading": fading - archived, "archived": archived}
    LifecycleRun.objects.create(org_id=org_id, job=LifecycleRun.Job.DECAY, started_at=started, counts=counts)
    count_organisation_bands(org_id=org_id)  # what was archived leaves the bands now
    return counts


def _archive(org_id, memory_ids: list, held: dict, threshold: float) -> int:
    """Archive these memories (those still live: a memory changed meanwhile is left to the next
    run), with their version rows."""
    memories = list(Memory.objects.select_for_update(skip_locked=True).filter(
        org_id=org_id, pk__in=memory_ids, status=Memory.Status.ACTIVE, deleted_at__isnull=True))
    if not memories:
        return 0
    tags: dict = {}
    for memory_id, tag in MemoryTag.objects.filter(org_id=org_id, memory_id__in=[m.pk for m in memories]).values_list(
            "memory_id", "tag"):
        tags.setdefault(memory_id, []).append(tag)
    actor = Actor(changed_by_type=MemoryVersion.ChangedByType.SYSTEM)
    for memory in memories:
        memory.status = Memory.Status.ARCHIVED
        memory.version += 1
    Memory.objects.bulk_update(memories, ["status", "version"])
    MemoryVersion.objects.bulk_create([
        version_row(memory, MemoryVersion.Operation.ARCHIVE,
                    actor.because(f"decay: strength {held[memory.pk]:.3f} fell below {threshold:g}"),
                    tags.get(memory.pk, []))
        for memory in memories])
    transaction.on_commit(lambda: cache.hot_memories_remove(memories))
    return len(memories)


def decay() -> dict:
    """The nightly job (memories.cron): every organisation's decay, each in its own transaction.
    Returns the totals."""
    with service_account():
        org_ids = list(Organization.objects.values_list("id", flat=True))
    totals = {"organisations": 0, "decaying": 0, "fading": 0, "archived": 0}
    for org_id in org_ids:
        counts = decay_organisation(org_id=org_id)
        totals["organisations"] += 1
        for name, value in counts.items():
            totals[name] += value
    logger.info("decay: %(archived)d archived, %(fading)d fading of %(decaying)d decaying memories "
                "in %(organisations)d organisations", totals)
    return totals
