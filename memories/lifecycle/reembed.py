"""Re-embedding without downtime (spec §2: embeddings kept apart from memories, portable
across model changes; docs/adr/0039).

A memory's vector by the active model is its own (memories.embedding): every search, the
approximate indexes and the covering index of live vectors read it, and nothing here slows
them. Another model's vectors are rows of memory_embeddings, keyed by model:

  * build(model): embeds every memory, of every organisation and whatever its status, with
    the model into memory_embeddings, in batches, while searches keep serving from the
    active model. It can stop anywhere and go on later: a memory that already has a vector
    of the model for its current text is skipped (text_hash).
  * activate(model): embeds what the build missed or what changed since (outside any long
    transaction), marks the model `switching`, moves its vectors into memories.embedding
    MOVE_BATCH memories a transaction (the active model's kept in memory_embeddings under its
    name), then flips the active row in one short transaction (docs/adr/0050). While vectors
    move, searches compare with the active model's vector of every memory wherever it is
    (memories.retrieval.vector): one model's answer, before, during and after; no edit waits
    for more than one batch. A memory with no current vector of the new model at the flip is
    left pending (embedding NULL), which the embedding sweep completes with the new model.
  * rollback(): activate the model the active one replaced; its vectors are still in
    memory_embeddings, so only what was written since is embedded again.

A write that embedded with the previous model and committed after the switch (a request
under way as it committed, a process that had not yet read the switch) keeps a vector of
that model; the embedding sweep finds such vectors by memories' embedding_model index and
embeds them again with the active model (memories.jobs.embed_pending).

On a Citus cluster (docs/adr/0042) the same statements run: a build reads and writes one
organisation at a time (router statements, the only ones in which Citus locks rows), while
the counts, the switch and a drop are multi-shard statements of the service account, run in
every shard group at once.

One re-embedding runs at a time in the deployment (a PostgreSQL advisory lock), whether the
command started it or the console (a job on the maintenance queue, which hands the worker
back every JOB_SECONDS so the other jobs go on). Progress is kept in the model's
embedding_models row, which every process can read.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime

from django.db import DatabaseError, connection, transaction
from django.utils import timezone

from memories.errors import Conflict, InvalidInput
from memories.models import EMBEDDING_DIMENSIONS, EmbeddingModel
from memories.vectors.embeddings import (
    ACTIVE_MODEL_SECONDS,
    KNOWN_MODELS,
    MODEL_NAME,
    UnknownModel,
    active_model,
    embed_contents,
    embedder_for,
    forget_active_model,
    known_model,
    text_hash,
    text_hash_sql,
    vector_literal,
)
from tenants.context import service_account, tenant_context

logger = logging.getLogger(__name__)

BATCH = 256  # memories embedded, and written, at a time
PASSES = 3  # passes over every memory a build makes at most: what is written meanwhile comes in the next
LOCK = 0x7265656D626564  # the advisory lock a re-embedding holds ("reembed")
QUEUE = "maintenance"
JOB_SECONDS = 30  # how long a job step keeps the worker before it queues the next step
JOB_KEPT_SECONDS = 24 * 3600
START = ("00000000-0000-0000-0000-000000000000",) * 2  # before every (org_id, id)
PAST = "ffffffff-ffff-ffff-ffff-ffffffffffff"  # after every id: (org_id, PAST) is past the organisation

State = EmbeddingModel.State
Progress = Callable[[int, int], None]  # (memories with a current vector, memories)


# The memory m's vector e of a model (%s) for its current text: at most one row
# (memory_embeddings_unique). `org` names the organisation as the statement does: the column
# m.org_id where it reads every organisation, a parameter (%s, before the model's) where it
# reads one, so that on a Citus cluster each part of the statement routes to its node.
def current_vector(org: str) -> str:
    return (f"e.org_id = {org} AND e.model = %s AND e.memory_id = m.id "
            f"AND e.text_hash = {text_hash_sql('m.content')}")


class Busy(Conflict):
    """Another re-embedding is running."""

    def __init__(self):
        super().__init__("another re-embedding is running (a build or a switch); wait for it to finish",
                         code="busy")


# --------------------------------------------------------------------------- what stands where


@dataclass
class Standing:
    """One known model in this deployment, as the command and the console show it."""

    name: str
    about: str
    state: str | None  # None: never built here
    done: int = 0
    total: int = 0
    task: str = ""  # "build" or "activate" when one was started and has not ended
    status: str = "idle"  # idle, queued (a job waits for the worker), running, stopped (it ended early)
    error: str = ""
    job_id: str = ""
    started_at: datetime | None = None
    finished_at: datetime | None = None
    activated_at: datetime | None = None
    retired_at: datetime | None = None
    replaced: str = ""

    @property
    def active(self) -> bool:
        return self.state == State.ACTIVE

    @property
    def activatable(self) -> bool:
        """Built (and still kept): a switch only embeds what was written since."""
        return self.state in (State.READY, State.RETIRED)

    @property
    def busy(self) -> bool:
        return self.status in ("queued", "running")


def standings() -> list[Standing]:
    """Every known model (and any model a row names that this code no longer knows), active first."""
    rows = {row.name: row for row in EmbeddingModel.objects.all()}
    # The lock says a re-embedding runs, not which: the one whose row moved last (another row
    # with a task is left from one that stopped).
    under_way = [row for row in rows.values() if row.task]
    running = max(under_way, key=lambda row: row.updated_at).name if under_way and lock_held() else None
    active = active_model()
    found = []
    for name in [*KNOWN_MODELS, *(name for name in rows if name not in KNOWN_MODELS)]:
        row = rows.get(name)
        about = KNOWN_MODELS[name].about if name in KNOWN_MODELS else "not known to this version of the code"
        if row is None:  # the default model has no row until a first switch, if its row was lost
            found.append(Standing(name=name, about=about, state=State.ACTIVE if name == active else None))
            continue
        status = "idle"
        if row.task:
            status = "running" if name == running else "queued" if _job_waiting(row.job_id) else "stopped"
        found.append(Standing(
            name=name, about=about, state=row.state, done=row.memories_done, total=row.memories_total,
            task=row.task, status=status, error=row.error, job_id=row.job_id, started_at=row.started_at,
            finished_at=row.finished_at, activated_at=row.activated_at, retired_at=row.retired_at,
            replaced=row.replaced))
    return sorted(found, key=lambda standing: not standing.active)


def lock_held() -> bool:
    """Whether a re-embedding is running, here or in another process."""
    with connection.cursor() as cursor:
        cursor.execute("""
            SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted
                           AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
                           AND classid = %s AND objid = %s AND objsubid = 1)
        """, [LOCK >> 32, LOCK & 0xFFFFFFFF])
        return cursor.fetchone()[0]


def _job_waiting(job_id: str) -> bool:
    if not job_id:
        return False
    import django_rq
    import redis
    from rq.exceptions import NoSuchJobError
    from rq.job import Job

    try:
        job = Job.fetch(job_id, connection=django_rq.get_queue(QUEUE).connection)
        state = job.get_status(refresh=False)
    except (NoSuchJobError, redis.RedisError):
        return False
    return (state.value if hasattr(state, "value") else str(state)) in ("queued", "scheduled", "deferred", "started")


# --------------------------------------------------------------------------- the state row


def _record(model: str, **fields) -> None:
    """Set fields of the model's row (made if missing), as the service account: only it may.
    A row another transaction is making or changing is waited for, then changed."""
    fields["updated_at"] = timezone.now()
    with service_account():
        EmbeddingModel.objects.update_or_create(name=model, defaults=fields,
                                                create_defaults={"state": State.BUILDING, **fields})


def _row(model: str) -> EmbeddingModel | None:
    return EmbeddingModel.objects.filter(name=model).first()


def _known(model: str):
    try:
        return known_model(model)
    except UnknownModel as exc:
        raise InvalidInput(str(exc), field="model") from None


def _buildable(model: str) -> None:
    _known(model)
    if model == active_model():
        raise Conflict(f"{model} is the active model: memories hold its vectors already", code="active")
    _not_switching(model)


def _not_switching(model: str) -> None:
    row = _row(model)
    if row is not None and row.state == State.SWITCHING:
        raise Conflict(f"a switch to {model} is under way or stopped midway: activate it again to finish it "
                       f"(manage.py reembed --activate {model})", code="switching")


def _activatable(model: str) -> EmbeddingModel:
    _known(model)
    row = _row(model)
    if model == active_model():
        raise Conflict(f"{model} is the active model already", code="active")
    if row is None:
        raise Conflict(f"{model} was never built here: build it first (manage.py reembed --model {model})",
                       code="not_built")
    if row.state == State.BUILDING:
        raise Conflict(f"{model}'s build has not finished ({row.memories_done} of {row.memories_total} memories): "
                       f"build it again to finish it (manage.py reembed --model {model})", code="not_built")
    return row


@contextmanager
def exclusive() -> Iterator[None]:
    """Hold the re-embedding lock for the block (this connection's session), or raise Busy."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(%s)", [LOCK])
        if not cursor.fetchone()[0]:
            raise Busy
    try:
        yield
    finally:
        try:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_unlock(%s)", [LOCK])
        except DatabaseError:
            connection.close()  # the session ends, and its lock with it


# --------------------------------------------------------------------------- building


@dataclass
class Built:
    model: str
    embedded: int  # memories embedded now
    done: int  # memories with a current vector of the model
    total: int
    finished: bool  # False: stopped at the deadline, to go on from `after`
    after: tuple[str, str] | None = None


def counts(model: str) -> tuple[int, int]:
    """(memories with a current vector of the model, memories), of every organisation."""
    # Multi-shard: every organisation at once, in each shard group (the subquery joins on org_id).
    with service_account(), connection.cursor() as cursor:
        cursor.execute(f"SELECT count(*) FILTER (WHERE EXISTS (SELECT 1 FROM memory_embeddings e "
                       f"WHERE {current_vector('m.org_id')})), count(*) FROM memories m WHERE m.indexed", [model])
        return cursor.fetchone()


def build(*, model: str, progress: Progress | None = None, seconds: float | None = None,
          after: tuple[str, str] | None = None, threads: int = 0) -> Built:
    """Embed with `model` every memory that lacks a vector of it for its current text, into
    memory_embeddings. Searches go on meanwhile, from the active model. seconds: stop after
    about that long (finished False; call again with `after` to go on). threads: the model's
    CPU threads in this process (0: one per core). Raises InvalidInput for an unknown model,
    Conflict for the active one, Busy while another re-embedding runs."""
    _buildable(model)
    with exclusive():
        row = _row(model)
        if row is None or row.state != State.BUILDING or not after:
            _record(model, state=State.BUILDING, task="build", error="", started_at=timezone.now(), finished_at=None)
        try:
            built = _embed_missing(model, progress=progress, seconds=seconds, after=after, threads=threads)
        except BaseException as exc:
            _record(model, task="", error=_reason(exc))
            raise
        if built.finished:
            _record(model, state=State.READY, task="", finished_at=timezone.now())
        return built


def _embed_missing(model: str, *, progress: Progress | None, seconds: float | None,
                   after: tuple[str, str] | None, threads: int = 0) -> Built:
    """Passes over every memory by (org_id, id), embedding those without a current vector of
    the model, until a whole pass finds none (or PASSES passes, or the deadline)."""
    embedder = embedder_for(model, threads)
    deadline = time.monotonic() + seconds if seconds else None
    done, total = counts(model)
    _record(model, memories_done=done, memories_total=total)
    if progress:
        progress(done, total)
    embedded, passes = 0, 0
    whole_pass, in_pass = after is None, 0
    cursor_at = after or START
    while True:
        if deadline is not None and time.monotonic() >= deadline:
            return Built(model, embedded, done, total, finished=False, after=cursor_at)
        n, last = _embed_batch(embedder, model, cursor_at)
        embedded, in_pass, done = embedded + n, in_pass + n, done + n
        total = max(total, done)
        if progress and n:
            progress(done, total)
        if last is not None:
            cursor_at = last
            continue
        passes += 1
        done, total = counts(model)
        _record(model, memories_done=done, memories_total=total)
        if progress:
            progress(done, total)
        if (whole_pass and in_pass == 0) or passes >= PASSES:
            return Built(model, embedded, done, total, finished=True)
        # What was written or changed during the pass, the next one finds.
        cursor_at, whole_pass, in_pass = START, True, 0


def _embed_batch(embedder, model: str, after: tuple[str, str]) -> tuple[int, tuple[str, str] | None]:
    """Embed the next BATCH memories after `after` that lack a current vector of the model;
    (how many, where the next batch starts: an (org_id, id) cursor), or (0, None) at the end of
    the memories. The memories are held FOR KEY SHARE until the vectors are written (an
    erasure of one waits that long; those being erased are skipped); their text may change
    meanwhile, and the vector is then stale by its text_hash, and made again by the next pass
    or the switch."""
    with transaction.atomic():
        rows, next_after = _lock_missing(model, after)
        if not rows:
            return 0, next_after
        vectors = embed_contents(embedder, [content for _, _, content in rows])
        by_org: dict = {}
        for (org_id, memory_id, content), vector in zip(rows, vectors):
            if len(vector) != EMBEDDING_DIMENSIONS:  # a model that is not what its registry entry says
                raise InvalidInput(f"{model} made a {len(vector)}-dimensional vector; memories hold "
                                   f"{EMBEDDING_DIMENSIONS}", field="model")
            by_org.setdefault(org_id, []).append((memory_id, vector_literal(vector), text_hash(content)))
        for org_id, batch in by_org.items():
            # One organisation's statement, which Citus sends whole to the organisation's node: it
            # reads the organisation's memories, and the new rows' ids come from here (with
            # gen_random_uuid(), or from unnest alone, Citus would collect the rows on the
            # coordinator and copy them to the node first).
            with tenant_context(org_id), connection.cursor() as cursor:
                ids, literals, hashes = zip(*batch)
                cursor.execute("""
                    INSERT INTO memory_embeddings (id, org_id, memory_id, model, dimensions, embedding, text_hash,
                                                   embedded_at)
                    SELECT b.new_id, m.org_id, m.id, %s, %s, b.embedding::vector, b.text_hash, now()
                    FROM unnest(%s::uuid[], %s::uuid[], %s::text[], %s::text[]) AS b(new_id, id, embedding, text_hash)
                    JOIN memories m ON m.org_id = %s AND m.id = b.id
                    ON CONFLICT (org_id, model, memory_id) DO UPDATE
                        SET embedding = EXCLUDED.embedding, dimensions = EXCLUDED.dimensions,
                            text_hash = EXCLUDED.text_hash, embedded_at = EXCLUDED.embedded_at
                """, [model, EMBEDDING_DIMENSIONS, [str(uuid.uuid4()) for _ in ids], [str(i) for i in ids],
                      list(literals), list(hashes), org_id])
        with service_account(), connection.cursor() as cursor:
            cursor.execute("UPDATE embedding_models SET memories_done = memories_done + %s, updated_at = now() "
                           "WHERE name = %s", [len(rows), model])
    return len(rows), next_after


# One organisation's memories after an id that lack a current vector of a model, locked: a
# router query on a cluster (Citus takes FOR KEY SHARE only in a statement of one organisation).
MISSING_IN_ORGANISATION = f"""
    SELECT m.org_id, m.id, m.content FROM memories m
    WHERE m.org_id = %s AND m.indexed AND m.id > %s::uuid
      AND NOT EXISTS (SELECT 1 FROM memory_embeddings e WHERE {current_vector("%s")})
    ORDER BY m.id LIMIT %s
    FOR KEY SHARE OF m SKIP LOCKED
"""


def _lock_missing(model: str, after: tuple[str, str]) -> tuple[list[tuple], tuple[str, str] | None]:
    """The next BATCH memories in (org_id, id) order after `after` that lack a current vector of
    the model, locked FOR KEY SHARE; and where the next batch starts (None: at the end). One
    organisation at a time, in the order of their ids, reading BATCH organisations at most, so
    that a batch ends soon even where thousands of organisations have nothing to embed."""
    org_after, id_after = str(uuid.UUID(str(after[0]))), after[1]
    rows: list[tuple] = []
    with service_account(), connection.cursor() as cursor:
        cursor.execute("SELECT id FROM organizations WHERE id >= %s ORDER BY id LIMIT %s", [org_after, BATCH])
        organisations = [str(org_id) for (org_id,) in cursor.fetchall()]
        for org_id in organisations:
            cursor.execute(MISSING_IN_ORGANISATION, [org_id, id_after if org_id == org_after else START[1],
                                                     org_id, model, BATCH - len(rows)])
            found = cursor.fetchall()
            rows += found
            if len(rows) == BATCH:
                return rows, (org_id, str(found[-1][1]))
    if len(organisations) < BATCH and not rows:  # no organisation after these
        return rows, None
    return rows, (organisations[-1], PAST) if organisations else None


# --------------------------------------------------------------------------- switching


@dataclass
class Switched:
    model: str
    previous: str
    switched: int  # memories whose vector of the model became their own, in batches
    pending: int  # memories left for the embedding sweep (written or changed as the flip ran)
    kept: int  # vectors of the previous model kept in memory_embeddings, to roll back to
    embedded: int  # memories embedded first, to catch up
    seconds: float  # how long the flip's transaction took
    batches: int = 0  # transactions that moved vectors
    longest_batch: float = 0.0  # seconds: the longest any memory's edit could wait for the switch

    def add_moves(self, other: "Switched") -> None:
        """Count another pass's moves (its memories, batches and longest batch) as this one's."""
        self.switched += other.switched
        self.batches += other.batches
        self.longest_batch = max(self.longest_batch, other.longest_batch)


MOVE_BATCH = 32  # memories whose vectors one transaction of a switch moves: an edit of one waits that long at most
SETTLE_SECONDS = 2 * ACTIVE_MODEL_SECONDS  # every process has read that a switch is moving vectors


def activate(*, model: str, progress: Progress | None = None, threads: int = 0) -> Switched:
    """Make `model` the active one (docs/adr/0050): catch up (embed what its build missed, or
    what changed since), mark it `switching` (searches then compare with the active model's
    vectors wherever they are), move its vectors into memories.embedding MOVE_BATCH memories
    a transaction, keeping the active model's beside them, then flip the active row. No edit
    waits for more than one batch; a search compares with one model's vectors throughout.
    Stopped midway, it is still `switching`, searches still answer from the active model,
    and activating it again goes on. Raises InvalidInput for an unknown model, Conflict for
    the active one or one never built (or whose build has not finished), Busy while another
    re-embedding runs."""
    _activatable(model)
    with exclusive():
        _activatable(model)  # again, now that nothing else can change it
        _record(model, task="activate", error="")
        try:
            embedded = _embed_missing(model, progress=progress, seconds=None, after=None, threads=threads).embedded
            row = _row(model)
            if row.state != State.SWITCHING:
                _record(model, state=State.SWITCHING)
                forget_active_model()
                # A search that read the standing before it changed compares with memories.embedding
                # alone: every such search has ended before the first batch moves.
                time.sleep(SETTLE_SECONDS)
            moved = _move(model, progress=progress)
            for _ in range(PASSES):
                if not _unmoved(model):
                    break
                # Memories written or changed since: their new text's vector, then theirs.
                embedded += _embed_missing(model, progress=None, seconds=None, after=None, threads=threads).embedded
                moved.add_moves(_move(model, progress=progress))
            switched = _flip(model)
        except BaseException as exc:
            _record(model, task="", error=_reason(exc))
            raise
    switched.embedded = embedded
    switched.add_moves(moved)
    _forget_moved(model)
    logger.info("embedding model switched", extra={"model": model, "previous": switched.previous,
                                                    "memories": switched.switched, "pending": switched.pending,
                                                    "seconds": round(switched.seconds, 1)})
    return switched


def rollback(*, progress: Progress | None = None, threads: int = 0) -> Switched:
    """Activate the model the active one replaced (its vectors were kept): the same batched
    switch, which moves back every memory's very vector, bit for bit."""
    current = EmbeddingModel.objects.filter(state=State.ACTIVE).first()
    if current is None or not current.replaced:
        raise Conflict(f"nothing to roll back to: no model was active before {active_model()}", code="no_previous")
    return activate(model=current.replaced, progress=progress, threads=threads)


# The memories of one organisation after an id whose own vector is not yet the model's, locked
# FOR NO KEY UPDATE (an edit of one waits for this batch; one an edit holds is skipped, and
# moved by the next pass): a router statement on a cluster.
UNMOVED_IN_ORGANISATION = """
    SELECT m.id FROM memories m
    WHERE m.org_id = %s AND m.id > %s::uuid AND m.indexed AND m.embedding_model IS DISTINCT FROM %s
    ORDER BY m.id LIMIT %s
    FOR NO KEY UPDATE OF m SKIP LOCKED
"""


def _move(model: str, *, progress: Progress | None) -> Switched:
    """One pass over every organisation's memories by (org_id, id), moving MOVE_BATCH at a
    time the model's current vectors into memories.embedding and keeping the vectors they
    replace in memory_embeddings under their model's name. A memory without a current vector of
    the model (changed since the catch-up) keeps its own; the next pass catches it up. Each
    batch is its own transaction, of one organisation (co-located on a Citus cluster)."""
    total = counts(model)[1]
    moved = Switched(model=model, previous="", switched=0, pending=0, kept=0, embedded=0, seconds=0.0)
    done = total - _unmoved(model)
    _record(model, memories_done=done, memories_total=total)
    with service_account(), connection.cursor() as cursor:
        cursor.execute("SELECT id FROM organizations ORDER BY id")
        organisations = [str(org_id) for (org_id,) in cursor.fetchall()]
    for org_id in organisations:
        after = START[1]
        while after is not None:
            started = time.perf_counter()
            n, after = _move_batch(model, org_id, after)
            if n or after is not None:
                moved.batches += 1
                moved.longest_batch = max(moved.longest_batch, time.perf_counter() - started)
            moved.switched += n
            done += n
            if progress and n:
                progress(min(done, total), total)
    return moved


def _move_batch(model: str, org_id: str, after: str) -> tuple[int, str | None]:
    """Move the next MOVE_BATCH memories of the organisation after `after`: (how many moved,
    where the next batch starts, or None at the organisation's end)."""
    digest = text_hash_sql("m.content")
    with transaction.atomic(), service_account(), connection.cursor() as cursor:
        cursor.execute(UNMOVED_IN_ORGANISATION, [org_id, after, model, MOVE_BATCH])
        ids = [str(memory_id) for (memory_id,) in cursor.fetchall()]
        if not ids:
            return 0, None
        # The vectors they hold now (the active model's), kept under its name: the rollback's,
        # and, until the flip, what searches compare with. Only of those that move.
        cursor.execute(f"""
            INSERT INTO memory_embeddings (id, org_id, memory_id, model, dimensions, embedding, text_hash, embedded_at)
            SELECT md5(m.id::text || m.embedding_model)::uuid, m.org_id, m.id, m.embedding_model,
                   m.embedding_dimensions, m.embedding, {digest}, coalesce(m.embedded_at, now())
            FROM memories m
            WHERE m.org_id = %s AND m.id = ANY(%s::uuid[]) AND m.embedding IS NOT NULL
              AND EXISTS (SELECT 1 FROM memory_embeddings e WHERE {current_vector("%s")})
            ON CONFLICT (org_id, model, memory_id) DO UPDATE
                SET embedding = EXCLUDED.embedding, dimensions = EXCLUDED.dimensions,
                    text_hash = EXCLUDED.text_hash, embedded_at = EXCLUDED.embedded_at
        """, [org_id, ids, org_id, model])
        cursor.execute(f"""
            UPDATE memories m SET embedding = e.embedding, embedding_model = e.model,
                   embedding_dimensions = e.dimensions, embedded_at = e.embedded_at
            FROM memory_embeddings e
            WHERE m.org_id = %s AND m.id = ANY(%s::uuid[]) AND {current_vector("%s")}
        """, [org_id, ids, org_id, model])
        moved = cursor.rowcount
        if moved:
            cursor.execute("UPDATE embedding_models SET memories_done = memories_done + %s, updated_at = now() "
                           "WHERE name = %s", [moved, model])
    return moved, ids[-1] if len(ids) == MOVE_BATCH else None


def _unmoved(model: str) -> int:
    """Memories (of every organisation) whose own vector is not yet the model's."""
    with service_account(), connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM memories m WHERE m.indexed AND m.embedding_model IS DISTINCT FROM %s",
                       [model])
        return cursor.fetchone()[0]


# The memories, deleted or not, whose vector is not the model's: by the memories_vector_model
# index (two ranges; "<>" would read the whole table, 0.7-2.2 s at 1M memories, while the flip
# holds the rows it changes).
OF_ANOTHER_MODEL = "m.embedding IS NOT NULL AND (m.embedding_model < %s OR m.embedding_model > %s)"


def _flip(model: str) -> Switched:
    """The switch's last step, in one short transaction as the service account: the memories
    still holding another model's vector (changed as the last pass ran) keep it in
    memory_embeddings and are left pending (never a stale vector), and the model becomes the
    active one. On a Citus cluster the multi-shard statements and the reference table's rows
    commit on every node together (two-phase commit)."""
    started = time.perf_counter()
    digest = text_hash_sql("m.content")
    with transaction.atomic(), service_account(), connection.cursor() as cursor:
        # Two switches never interleave, nor a switch and a build's end.
        cursor.execute("SELECT name, state FROM embedding_models ORDER BY name FOR UPDATE")
        # No active row: the memories held the default model's vectors (as before migration 0026).
        previous = next((name for name, state in cursor.fetchall() if state == State.ACTIVE), MODEL_NAME)
        cursor.execute(f"""
            INSERT INTO memory_embeddings (id, org_id, memory_id, model, dimensions, embedding, text_hash, embedded_at)
            SELECT md5(m.id::text || m.embedding_model)::uuid, m.org_id, m.id, m.embedding_model,
                   m.embedding_dimensions, m.embedding, {digest}, coalesce(m.embedded_at, now())
            FROM memories m WHERE {OF_ANOTHER_MODEL}
            ON CONFLICT (org_id, model, memory_id) DO UPDATE
                SET embedding = EXCLUDED.embedding, dimensions = EXCLUDED.dimensions,
                    text_hash = EXCLUDED.text_hash, embedded_at = EXCLUDED.embedded_at
        """, [model, model])
        kept = cursor.rowcount
        cursor.execute(f"""
            UPDATE memories m SET embedding = NULL, embedding_model = '', embedding_dimensions = NULL, embedded_at = NULL
            WHERE {OF_ANOTHER_MODEL}
        """, [model, model])
        pending = cursor.rowcount
        # The time as a value: Citus wants an ON CONFLICT's SET immutable.
        switched_at = timezone.now()
        cursor.execute("""
            INSERT INTO embedding_models (name, state, memories_total, memories_done, task, job_id, error, replaced,
                                          retired_at, updated_at)
            VALUES (%s, %s, 0, 0, '', '', '', '', %s, %s)
            ON CONFLICT (name) DO UPDATE SET state = EXCLUDED.state, retired_at = EXCLUDED.retired_at, task = '',
                                             updated_at = EXCLUDED.updated_at
        """, [previous, State.RETIRED, switched_at, switched_at])
        cursor.execute("""
            UPDATE embedding_models SET state = %s, activated_at = %s, retired_at = NULL, replaced = %s,
                   task = '', error = '', updated_at = %s
            WHERE name = %s
        """, [State.ACTIVE, switched_at, previous, switched_at, model])
        # Every process reads the switch within ACTIVE_MODEL_SECONDS; this one at once (and
        # again once it commits, in case it read the model meanwhile).
        forget_active_model()
        transaction.on_commit(_after_switch)
    return Switched(model=model, previous=previous, switched=0, pending=pending, kept=kept,
                    embedded=0, seconds=time.perf_counter() - started)


def _forget_moved(model: str) -> None:
    """After the flip, the active model's vectors are memories' own: its rows in
    memory_embeddings go, one organisation and MOVE_BATCH * 32 rows at a time (they block no
    edit; a search compares with them no longer)."""
    with service_account(), connection.cursor() as cursor:
        cursor.execute("SELECT id FROM organizations ORDER BY id")
        organisations = [str(org_id) for (org_id,) in cursor.fetchall()]
    for org_id in organisations:
        while True:
            with transaction.atomic(), service_account(), connection.cursor() as cursor:
                cursor.execute("""
                    DELETE FROM memory_embeddings WHERE org_id = %s AND model = %s AND id IN (
                        SELECT id FROM memory_embeddings WHERE org_id = %s AND model = %s LIMIT %s)
                """, [org_id, model, org_id, model, MOVE_BATCH * 32])
                if cursor.rowcount < MOVE_BATCH * 32:
                    break


def _after_switch() -> None:
    """Once the switch commits: this process reads the new model, and the worker embeds what
    was left pending now rather than within the minute."""
    forget_active_model()
    from memories import jobs

    try:
        import django_rq

        django_rq.get_queue(jobs.QUEUE).enqueue(jobs.embed_pending, job_timeout=3600)
    except Exception as exc:  # Redis unreachable: the cron's sweep embeds them when it is back
        logger.warning("embedding sweep not enqueued after a switch (%s)", type(exc).__name__)


# --------------------------------------------------------------------------- dropping


def drop(*, model: str) -> int:
    """Delete a model's vectors that is not the active one (its row too): the space they take
    (1.5 kB a memory) back. It can no longer be switched to without a build. Returns how
    many vectors went."""
    if model == active_model():
        raise Conflict(f"{model} is the active model: switch to another first", code="active")
    row = _row(model)
    if row is None:
        raise InvalidInput(f"{model} has no vectors here to drop", field="model")
    _not_switching(model)
    with exclusive(), transaction.atomic(), service_account(), connection.cursor() as cursor:
        # Multi-shard: every organisation's vectors of the model, in every shard group at once.
        cursor.execute("DELETE FROM memory_embeddings WHERE model = %s", [model])
        dropped = cursor.rowcount
        cursor.execute("DELETE FROM embedding_models WHERE name = %s AND state <> %s", [model, State.ACTIVE])
    return dropped


# --------------------------------------------------------------------------- in the background
# The console's builds and switches run in the worker, a step of JOB_SECONDS at a time: each
# step queues the next at the end of the maintenance queue, so the worker's other jobs (the
# embedding of new memories, the word statistics' fold) wait for one step at most, not for
# the whole build. The switch's moves, once the catch-up is done, run in one job.


def reembed_enqueue(*, model: str, then_activate: bool = False) -> str:
    """Ask the worker to build `model` (and then switch to it, with then_activate); returns the
    job's id. Refused as the command would be, and while a re-embedding runs or waits. Raises
    Redis's errors if the queue is unreachable (nothing is recorded then)."""
    import django_rq

    if then_activate:
        _activatable(model)
    else:
        _buildable(model)
    if lock_held() or any(standing.status == "queued" for standing in standings()):
        raise Busy
    job_id = str(uuid.uuid4())
    fields = {"task": "activate" if then_activate else "build", "job_id": job_id, "error": ""}
    if not then_activate:
        fields.update(state=State.BUILDING, memories_done=0, memories_total=0, started_at=None, finished_at=None)
        if (row := _row(model)) and row.state == State.BUILDING:
            fields.update(memories_done=row.memories_done, memories_total=row.memories_total)
    # The row first: the job's own changes of it wait until the caller commits these.
    _record(model, **fields)
    # Then the job, at once rather than when the caller commits: the page that answers shows
    # it waiting (a caller that rolls back, as a failed request does, leaves a job that builds
    # or switches as asked all the same).
    django_rq.get_queue(QUEUE, commit_mode="auto").enqueue(
        reembed_job, model=model, then_activate=then_activate, job_id=job_id, job_timeout=4 * 3600,
        result_ttl=JOB_KEPT_SECONDS, failure_ttl=JOB_KEPT_SECONDS)
    return job_id


def reembed_job(*, model: str, then_activate: bool = False, after: list[str] | None = None) -> dict:
    """The worker's side: a step of the build (JOB_SECONDS at most, then the next step is
    queued), and the switch once the build is done, when asked. Returns what it did."""
    import django_rq
    from rq import get_current_job

    resume = tuple(after) if after else None
    try:
        if then_activate:
            _activatable(model)
            with exclusive():
                _record(model, task="activate")
                built = _embed_missing(model, progress=None, seconds=JOB_SECONDS, after=resume)
            if built.finished:
                switched = activate(model=model)
                return {"model": model, "switched": switched.switched, "pending": switched.pending}
        else:
            built = build(model=model, seconds=JOB_SECONDS, after=resume)
            if built.finished:
                return {"model": model, "embedded": built.embedded, "done": built.done, "total": built.total}
    except Busy:
        _record(model, task="", error="another re-embedding was running: start this one again when it has finished")
        return {"model": model, "error": "busy"}
    except Exception as exc:
        _record(model, task="", error=_reason(exc))
        raise
    job = get_current_job()
    next_id = str(uuid.uuid4())
    django_rq.get_queue(QUEUE, commit_mode="auto").enqueue(
        reembed_job, model=model, then_activate=then_activate, after=list(built.after), job_id=next_id,
        job_timeout=job.timeout if job else 4 * 3600, result_ttl=JOB_KEPT_SECONDS, failure_ttl=JOB_KEPT_SECONDS)
    _record(model, job_id=next_id, task="activate" if then_activate else "build")
    return {"model": model, "embedded": built.embedded, "done": built.done, "total": built.total, "next": next_id}


def _reason(exc: BaseException) -> str:
    """Why a build or a switch stopped, in a line for the console: never a stack trace, nor a
    database error's DETAIL (which may quote a row, content and all)."""
    if isinstance(exc, KeyboardInterrupt):
        return "stopped by hand"
    if message := getattr(exc, "message", None):
        return message
    diagnosis = getattr(exc.__cause__, "diag", None) or getattr(exc, "diag", None)
    if diagnosis is not None:
        return f"the database refused it: {diagnosis.message_primary or type(exc).__name__}"
    return f"{type(exc).__name__}: {exc}"[:500]
