"""The approximate-nearest-neighbour index on memories.embedding: HNSW by default, IVFFlat by setting.

Both index only live memories (status active, not deleted), the rows searches return, and
both use cosine distance (`<=>`), matching the L2-normalised MiniLM vectors.
Switching kinds: set MEMORY_PLATFORM_VECTOR_INDEX and run `manage.py rebuild_vector_index`.

Large tenants also get an HNSW index of their own (a partial index on their org_id): in the
shared index a search keeps only its tenant's share of the candidates it visits, so a tenant
holding 10% of a million rows needed ef_search 500-600 and 10 / 15 ms p50 / p95 for recall
0.975, where its own index reaches 0.992 with ef_search 200 in 8 / 10 (docs/adr/0035).
A tenant holding as many live store items (LangGraph's store) gets another, of those alone: a
store search walking the tenant's index of memories kept one candidate in forty (docs/adr/0060).
`sync_tenant_indexes` creates and drops them; the worker runs it hourly,
`manage.py rebuild_vector_index --tenants` on demand.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass, field

from django.db import connections, transaction

from memories.models import LIVE_SQL
from memory_platform.config import config

logger = logging.getLogger(__name__)

INDEX_NAME = "memories_embedding_ann"
KINDS = ("hnsw", "ivfflat")
LIVE_PREDICATE = LIVE_SQL


def configured_kind() -> str:
    kind = config().vector_index.lower()
    if kind not in KINDS:
        raise ValueError(f"MEMORY_PLATFORM_VECTOR_INDEX must be one of {', '.join(KINDS)}, not {kind!r}")
    return kind


def hnsw_options() -> str:
    return f"m = {config().hnsw_m}, ef_construction = {config().hnsw_ef_construction}"


def create_sql(kind: str, *, concurrently: bool = False) -> str:
    if kind == "hnsw":
        options = hnsw_options()
    elif kind == "ivfflat":
        options = f"lists = {config().ivfflat_lists}"
    else:
        raise ValueError(f"unknown vector index kind {kind!r}; expected one of {', '.join(KINDS)}")
    return (
        f"CREATE INDEX {'CONCURRENTLY ' if concurrently else ''}{INDEX_NAME} ON memories "
        f"USING {kind} (embedding vector_cosine_ops) WITH ({options}) WHERE {LIVE_PREDICATE}"
    )


DROP_SQL = f"DROP INDEX IF EXISTS {INDEX_NAME}"


def current_index(*, using: str = "owner") -> tuple[str | None, dict]:
    """The access method and the build options (lists, m, ...) of the index as it exists in
    the database; (None, {}) if there is none."""
    with connections[using].cursor() as cursor:
        cursor.execute(
            """
            SELECT am.amname, c.reloptions FROM pg_class c JOIN pg_am am ON am.oid = c.relam
            WHERE c.relname = %s AND c.relkind = 'i'
            """,
            [INDEX_NAME],
        )
        row = cursor.fetchone()
    if not row:
        return None, {}
    return row[0], dict(option.split("=", 1) for option in row[1] or [])


def current_kind(*, using: str = "owner") -> str | None:
    return current_index(using=using)[0]


def rebuild(kind: str | None = None, *, using: str = "owner") -> str:
    """Replace the index with one of `kind` (default: the configured kind). Returns the kind.

    The new index is built before the old one is dropped, in one transaction; on a large
    table prefer a maintenance window (IVFFlat also needs rows to train its lists on).
    """
    kind = kind or configured_kind()
    temporary = f"{INDEX_NAME}_new"
    with connections[using].cursor() as cursor:
        cursor.execute(f"DROP INDEX IF EXISTS {temporary}")
        cursor.execute(create_sql(kind).replace(f"INDEX {INDEX_NAME} ", f"INDEX {temporary} ", 1))
        cursor.execute(DROP_SQL)
        cursor.execute(f"ALTER INDEX {temporary} RENAME TO {INDEX_NAME}")
    return kind


# --------------------------------------------------------------------------- tenants' own indexes

SYNC_LOCK = 0x6D656D5F616E6E  # the advisory lock a sync holds ("mem_ann")


@dataclass(frozen=True)
class OwnKind:
    """One kind of HNSW index a large tenant gets for itself: a partial index on its org_id,
    its live rows and `condition`."""

    name: str  # what it holds, as messages say it: "memories", "store items"
    prefix: str  # its indexes' names: the prefix and the org id's hex
    condition: str  # what its rows are beyond the tenant's live memories ("" for all of them)

    @property
    def rows(self) -> str:
        """Its rows within the tenant's, in SQL: the live ones, and of them those of `condition`."""
        return f"{LIVE_PREDICATE} AND {self.condition}" if self.condition else LIVE_PREDICATE


# A tenant's live memories: what its searches of memories walk.
MEMORIES = OwnKind("memories", "memories_ann_org_", "")
# A tenant's live store items (LangGraph's store: a key): 2.5% of a million memories in the
# scale benchmark, so a store search through the tenant's index of memories kept one candidate
# in forty and walked on past the rest (110-160 ms at 1M; docs/adr/0060).
STORE_ITEMS = OwnKind("store items", "memories_ann_store_org_", "key IS NOT NULL")
OWN_KINDS = (MEMORIES, STORE_ITEMS)


def tenant_index_name(org_id, kind: OwnKind = MEMORIES) -> str:
    return f"{kind.prefix}{uuid.UUID(str(org_id)).hex}"


def tenant_index_sql(org_id, kind: OwnKind = MEMORIES, *, concurrently: bool = True) -> str:
    """CREATE INDEX for one tenant's live vectors of this kind (the org id is a parsed UUID, so
    inlining it is safe; the planner needs it as a literal to match the predicate)."""
    org = uuid.UUID(str(org_id))
    return (
        f"CREATE INDEX {'CONCURRENTLY ' if concurrently else ''}IF NOT EXISTS {tenant_index_name(org, kind)} "
        f"ON memories USING hnsw (embedding vector_cosine_ops) WITH ({hnsw_options()}) "
        f"WHERE org_id = '{org}' AND {kind.rows}"
    )


def tenant_indexes(kind: OwnKind = MEMORIES, *, using: str = "default") -> dict[uuid.UUID, bool]:
    """The tenants that have an index of this kind of their own -> whether it is valid (a
    concurrent build that failed leaves an invalid one behind, which the planner never uses)."""
    with connections[using].cursor() as cursor:
        cursor.execute(
            """
            SELECT c.relname, i.indisvalid FROM pg_class c JOIN pg_index i ON i.indexrelid = c.oid
            WHERE c.relkind = 'i' AND c.relname LIKE %s AND i.indrelid = 'memories'::regclass
            """,
            [kind.prefix.replace("_", r"\_") + "%"],
        )
        return {uuid.UUID(name[len(kind.prefix):]): valid for name, valid in cursor.fetchall()}


@dataclass
class TenantIndexPlan:
    kind: OwnKind
    sizes: dict  # tenant -> its live rows of the kind, for tenants above half the threshold
    create: list  # tenants to build an index for, largest first
    drop: list  # tenants whose index goes (too small now, gone, or left invalid by a failed build)


def _sizes(kind: OwnKind, at_least: int, using: str) -> dict:
    """Each tenant holding at least `at_least` live rows of the kind -> how many, largest first.
    Pending embeddings included: the narrow partial indexes answer it (memories_agent_live for
    the memories, memories_store_namespaces for the store items), where requiring the vector
    would read the 2 GB covering index at 1M rows."""
    with connections[using].cursor() as cursor:
        cursor.execute(
            f"""
            SELECT org_id, count(*) FROM memories WHERE {kind.rows}
            GROUP BY org_id HAVING count(*) >= %s ORDER BY count(*) DESC, org_id
            """,
            [at_least],
        )
        return dict(cursor.fetchall())


def plan_tenant_indexes(kind: OwnKind = MEMORIES, *, using: str = "owner") -> TenantIndexPlan:
    """Which of the TENANT_INDEXES_MAX largest tenants holding at least TENANT_INDEX_ROWS live
    rows of the kind lack an index of their own, and which indexes have no reason left: a
    tenant keeps its index until it falls below half the threshold, so one hovering at it is
    not rebuilt again and again."""
    from tenants.context import service_account

    threshold, most = config().search.tenant_index_rows, config().search.tenant_indexes_max
    with transaction.atomic(using=using), service_account(using=using):
        sizes = _sizes(kind, max(threshold // 2, 1), using)
    existing = tenant_indexes(kind, using=using)
    largest = list(sizes)[:most]
    wanted = [org for org in largest if sizes[org] >= threshold]
    keep = set(wanted) | {org for org in largest if existing.get(org)}
    drop = [org for org, valid in existing.items() if org not in keep or not valid]
    return TenantIndexPlan(kind=kind, sizes=sizes, create=[org for org in wanted if not existing.get(org)], drop=drop)


@dataclass
class TenantIndexChanges:
    created: list = field(default_factory=list)  # the indexes' names
    dropped: list = field(default_factory=list)


def sync_tenant_indexes(*, using: str = "owner", on_plan=None, on_create=None, on_created=None) -> TenantIndexChanges:
    """Carry out plan_tenant_indexes for each kind (the worker's hourly job). Builds run
    CONCURRENTLY, so writes go on meanwhile; inside a transaction (the test suite's), where that
    is impossible, they are plain. on_plan(plan) for each kind, then on_create(plan, org_id) and
    on_created(plan, org_id) around each build, let a caller show progress."""
    changes = TenantIndexChanges()
    concurrently = "CONCURRENTLY " if not connections[using].in_atomic_block else ""
    with connections[using].cursor() as cursor:
        # One sync at a time (the hourly job and the command may meet): an index another sync
        # is building reads as invalid until it is done, and would be dropped.
        cursor.execute("SELECT pg_try_advisory_lock(%s)", [SYNC_LOCK])
        if not cursor.fetchone()[0]:
            logger.info("another sync of the tenants' vector indexes is running; this one stops")
            return changes
        try:
            plans = [plan_tenant_indexes(kind, using=using) for kind in OWN_KINDS]
            for plan in plans:
                if on_plan:
                    on_plan(plan)
            for plan in plans:
                for org in plan.drop:
                    name = tenant_index_name(org, plan.kind)
                    cursor.execute(f"DROP INDEX {concurrently}IF EXISTS {name}")
                    changes.dropped.append(name)
            for plan in plans:
                for org in plan.create:
                    if on_create:
                        on_create(plan, org)
                    cursor.execute(tenant_index_sql(org, plan.kind, concurrently=bool(concurrently)))
                    changes.created.append(tenant_index_name(org, plan.kind))
                    logger.info("built the vector index of the %s of organisation %s (%d)",
                                plan.kind.name, org, plan.sizes[org])
                    if on_created:
                        on_created(plan, org)
        finally:
            cursor.execute("SELECT pg_advisory_unlock(%s)", [SYNC_LOCK])
    return changes
