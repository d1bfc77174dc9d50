"""The approximate-nearest-neighbour index on memories.embedding: HNSW by default, IVFFlat by setting.

Both index only live memories (status active, not deleted), the rows searches return, and
both use cosine distance (`<=>`), matching the L2-normalised MiniLM vectors.
Switching kinds: set MEMORY_PLATFORM_VECTOR_INDEX and run `manage.py rebuild_vector_index`.
"""

from __future__ import annotations

from django.conf import settings
from django.db import connections

INDEX_NAME = "memories_embedding_ann"
KINDS = ("hnsw", "ivfflat")
LIVE_PREDICATE = "status = 'active' AND deleted_at IS NULL"


def configured_kind() -> str:
    kind = settings.MEMORY_PLATFORM["VECTOR_INDEX"].lower()
    if kind not in KINDS:
        raise ValueError(f"MEMORY_PLATFORM_VECTOR_INDEX must be one of {', '.join(KINDS)}, not {kind!r}")
    return kind


def create_sql(kind: str, *, concurrently: bool = False) -> str:
    knobs = settings.MEMORY_PLATFORM
    if kind == "hnsw":
        options = f"m = {int(knobs['HNSW_M'])}, ef_construction = {int(knobs['HNSW_EF_CONSTRUCTION'])}"
    elif kind == "ivfflat":
        options = f"lists = {int(knobs['IVFFLAT_LISTS'])}"
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
