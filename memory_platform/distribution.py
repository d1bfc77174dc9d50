"""Where each table lives on a Citus cluster: distributed by organisation, a reference table on
every node, or a local table on the coordinator (docs/adr/0042).

One rule decides it, from the schema itself rather than a list kept by hand:
  * every table with an org_id column is distributed by org_id, all colocated: an
    organisation's rows of every table sit in one shard group on one node, so each of its
    statements is a router query and its foreign keys and cascades stay there;
  * the tables those reference that are not an organisation's rows are reference tables,
    copied to every node, so a distributed table may point at them and join them where it
    is: `organizations` itself (one small row per tenant, and a slug unique across all of
    them, which a table distributed by id could not keep), operators' accounts, embedding
    models;
  * everything else (migrations, sessions, content types, permissions) stays on the coordinator.

`manage.py migrate` runs `distribute` last on a database with Citus (a no-op elsewhere and for
tables already placed), so a fresh cluster and the migrations of a new release end the same
way; `manage.py distribute` converts an existing single-node database in place, with progress.
On plain PostgreSQL nothing here runs: the schema is the same on both engines.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass

from django.db import connections, transaction
from psycopg import sql

from memory_platform.database import contended
from memory_platform.schema import PER_ROW_SERVICE_ACCOUNT_PREDICATE, tenant_predicate

TENANT_COLUMN = "org_id"
# Tables without an org_id that tenant tables reference: on every node.
REFERENCE_TABLES = ("organizations", "auth_user", "embedding_models")

# Set for the database by `distribute`, read by every later connection:
DATABASE_SETTINGS = {
    # SET LOCAL (the tenant, the service flag, the search's index settings) travels with the
    # transaction to every worker it reaches (memory_platform.database.set_local).
    "citus.propagate_set_commands": "local",
}


@dataclass(frozen=True)
class Placement:
    table: str
    kind: str  # "distributed", "reference" or "local"
    column: str | None = None  # the distribution column of a distributed table


def _tables(cursor) -> list[str]:
    cursor.execute("""
        SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p') AND NOT c.relispartition
        ORDER BY c.relname
    """)
    return [row[0] for row in cursor.fetchall()]


def _tenant_tables(cursor) -> set[str]:
    cursor.execute("""
        SELECT c.relname FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
        JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p') AND a.attname = %s AND NOT a.attisdropped
    """, [TENANT_COLUMN])
    return {row[0] for row in cursor.fetchall()}


def _references(cursor) -> dict[str, set[str]]:
    """Each table and the other tables its foreign keys point at."""
    cursor.execute("""
        SELECT child.relname, parent.relname FROM pg_constraint k
        JOIN pg_class child ON child.oid = k.conrelid JOIN pg_class parent ON parent.oid = k.confrelid
        JOIN pg_namespace n ON n.oid = child.relnamespace
        WHERE k.contype = 'f' AND n.nspname = 'public' AND child.oid <> parent.oid
    """)
    references: dict[str, set[str]] = {}
    for child, parent in cursor.fetchall():
        references.setdefault(child, set()).add(parent)
    return references


def plan(using: str = "owner") -> list[Placement]:
    """Every table and where it belongs, in the order they can be placed: reference tables,
    then each distributed table after the tables it references."""
    with connections[using].cursor() as cursor:
        tables = _tables(cursor)
        tenant = _tenant_tables(cursor)
        references = _references(cursor)
    placements = [Placement(table, "reference") for table in REFERENCE_TABLES if table in tables]
    placed: set[str] = set(REFERENCE_TABLES)
    pending = sorted(table for table in tables if table in tenant and table not in placed)
    while pending:
        ready = [table for table in pending if not (references.get(table, set()) & set(pending)) - {table}]
        if not ready:
            raise RuntimeError(f"the foreign keys of {', '.join(pending)} form a cycle")
        for table in ready:
            placements.append(Placement(table, "distributed", TENANT_COLUMN))
            placed.add(table)
            pending.remove(table)
    placements += [Placement(table, "local") for table in tables if table not in placed]
    return placements


def placed(using: str = "owner") -> dict[str, Placement]:
    """Where Citus has each table now (tables it does not know are local)."""
    with connections[using].cursor() as cursor:
        cursor.execute("""
            SELECT logicalrelid::regclass::text, partmethod,
                   CASE WHEN partmethod = 'h' THEN column_to_column_name(logicalrelid, partkey) END
            FROM pg_dist_partition
        """)
        found = {}
        for table, method, column in cursor.fetchall():
            if method == "h":
                found[table] = Placement(table, "distributed", column)
            elif method == "n" and table in REFERENCE_TABLES:
                found[table] = Placement(table, "reference")
            # Citus-managed local tables (method "n", on the coordinator) stay "local".
        return found


def distribute(using: str = "owner", progress: Callable[[str], None] | None = None) -> list[Placement]:
    """Place every table the plan places and Citus does not have yet; returns those placed.
    All in one transaction, so a failure leaves the database as it was; a table with rows has
    them moved to its shards."""
    say = progress or (lambda message: None)
    done = placed(using)
    todo = [p for p in plan(using) if p.kind != "local" and p.table not in done]
    with connections[using].cursor() as cursor:
        forced = _forced_row_security(cursor, [*done, *(p.table for p in todo)])
        if not todo:
            _owner_not_forced(cursor, forced)
            return []
    with transaction.atomic(using=using), connections[using].cursor() as cursor:
        # One connection per worker for the whole transaction: its DDL and the foreign keys
        # made at the end must see the shards it created.
        cursor.execute("SET LOCAL citus.multi_shard_modify_mode = 'sequential'")
        cursor.execute("SELECT current_database()")
        database = cursor.fetchone()[0]
        for name, value in DATABASE_SETTINGS.items():
            cursor.execute(sql.SQL("ALTER DATABASE {} SET {} = {}").format(
                sql.Identifier(database), sql.SQL(name), sql.Literal(value)).as_string(None))
        # The memories table's triggers (its updated_at, the lexical statistics' deltas) fire on
        # its shards, where every row they touch is of the same organisation and so in the same
        # shard group (docs/adr/0042); Citus asks for the setting before it distributes them.
        cursor.execute("SET LOCAL citus.enable_unsafe_triggers = on")
        # For the statements below that read rows while row-level security is still forced on
        # the owner (as on one node, until _owner_not_forced).
        cursor.execute("SET LOCAL app.service_account = 'on'")
        tables = [p.table for p in todo]
        for table, name, predicate in _policies_read_per_row(cursor, tables):
            cursor.execute(sql.SQL("ALTER POLICY {} ON {} ").format(
                sql.Identifier(name), sql.Identifier(table)).as_string(None) + predicate)
        # A local table that points at a table becoming a reference table would be turned into
        # a Citus-managed local table with it, and with the rest of its foreign-key graph: every
        # tenant table, whose policies Citus refuses there. So the tenant tables' keys to the
        # reference tables are held back until both sides are placed, then made again.
        held = _held_foreign_keys(cursor, [p.table for p in todo if p.kind == "reference"])
        for table, name, _ in held:
            cursor.execute(sql.SQL("ALTER TABLE {} DROP CONSTRAINT {}").format(
                sql.Identifier(table), sql.Identifier(name)).as_string(None))
        # Citus copies a table's rows to its shards with COPY, which row-level security refuses,
        # even to the owner while it is forced.
        _owner_not_forced(cursor, forced)
        for number, placement in enumerate(todo, start=1):
            say(f"[{number}/{len(todo)}] {placement.table}: {placement.kind}"
                + (f" by {placement.column}" if placement.column else ""))
            if placement.kind == "reference":
                cursor.execute("SELECT create_reference_table(%s)", [placement.table])
            else:
                _generated_columns_after(cursor, placement.table, placement.column)
                # Colocated by Citus's default rule: the same shard count and column type.
                cursor.execute("SELECT create_distributed_table(%s, %s)", [placement.table, placement.column])
        for table, name, definition in held:
            cursor.execute(sql.SQL("ALTER TABLE {} ADD CONSTRAINT {} ").format(
                sql.Identifier(table), sql.Identifier(name)).as_string(None) + definition)
    return todo


def _generated_columns_after(cursor, table: str, column: str) -> None:
    """Make each generated column of `table` that comes before its distribution column come
    after it, with its indexes. Citus 14's shard split (isolate_tenant_to_new_shard) streams a
    shard's rows without its generated and dropped columns but finds the distribution column
    by its place among all of them, so a generated column before org_id makes every split of
    the table fail ("the partition column value cannot be NULL") or route rows by the wrong
    column (docs/adr/0042). Shards are created from the table's definition, where a column
    re-added comes last and a dropped one is gone; on one node the order changes nothing.
    The column keeps its storage (memories.search_vector is MAIN, kept in the row: memories
    0013), which Citus refuses to change once the table is distributed."""
    cursor.execute("""
        SELECT a.attname, format_type(a.atttypid, a.atttypmod), pg_get_expr(d.adbin, d.adrelid), a.attgenerated,
               CASE a.attstorage WHEN 'p' THEN 'PLAIN' WHEN 'e' THEN 'EXTERNAL' WHEN 'm' THEN 'MAIN'
                   ELSE 'EXTENDED' END
        FROM pg_attribute a JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
        WHERE a.attrelid = %s::regclass AND a.attgenerated <> '' AND NOT a.attisdropped
          AND a.attnum < (SELECT attnum FROM pg_attribute WHERE attrelid = %s::regclass AND attname = %s)
        ORDER BY a.attnum
    """, [table, table, column])
    for name, type_, expression, kind, storage in cursor.fetchall():
        # What depends on the column (its indexes, the triggers that name it) goes with it, and
        # is made again after.
        cursor.execute("""
            SELECT pg_get_indexdef(d.objid) FROM pg_depend d JOIN pg_attribute a
              ON a.attrelid = d.refobjid AND a.attnum = d.refobjsubid
            WHERE d.classid = 'pg_class'::regclass AND d.refobjid = %s::regclass AND a.attname = %s
            UNION
            SELECT pg_get_triggerdef(d.objid) FROM pg_depend d JOIN pg_attribute a
              ON a.attrelid = d.refobjid AND a.attnum = d.refobjsubid
            WHERE d.classid = 'pg_trigger'::regclass AND d.refobjid = %s::regclass AND a.attname = %s
        """, [table, name, table, name])
        dependents = [row[0] for row in cursor.fetchall()]
        cursor.execute(sql.SQL("ALTER TABLE {} DROP COLUMN {} CASCADE").format(
            sql.Identifier(table), sql.Identifier(name)).as_string(None))
        cursor.execute(sql.SQL("ALTER TABLE {} ADD COLUMN {} ").format(
            sql.Identifier(table), sql.Identifier(name)).as_string(None)
            + f"{type_} GENERATED ALWAYS AS ({expression}) " + ("STORED" if kind == "s" else "VIRTUAL"))
        cursor.execute(sql.SQL("ALTER TABLE {} ALTER COLUMN {} SET STORAGE {}").format(
            sql.Identifier(table), sql.Identifier(name), sql.SQL(storage)).as_string(None))
        for definition in dependents:
            cursor.execute(definition)


def columns_skipped_before_distribution_column(cursor, org_id) -> list[str]:
    """The shards of the organisation's shard group that a split would misread: those with a
    generated or dropped column before org_id (_generated_columns_after). A shard's own column
    order is what counts; a shard created by a move is compact again."""
    cursor.execute("""
        SELECT r.shardid, r.result FROM pg_dist_partition p
        CROSS JOIN LATERAL run_command_on_shards(p.logicalrelid, $$
            SELECT count(*) FROM pg_attribute a WHERE a.attrelid = '%%1$s'::regclass AND a.attnum > 0
              AND (a.attisdropped OR a.attgenerated <> '')
              AND a.attnum < (SELECT attnum FROM pg_attribute WHERE attrelid = '%%1$s'::regclass AND attname = 'org_id')
        $$) r
        WHERE p.partmethod = 'h' AND r.shardid = get_shard_id_for_distribution_column(p.logicalrelid, %s::uuid)
          AND r.result <> '0'
    """, [str(org_id)])
    found = cursor.fetchall()
    if not found:
        return []
    cursor.execute("SELECT shard_name::text FROM citus_shards WHERE shardid = ANY(%s) ORDER BY 1",
                   [[shard for shard, _ in found]])
    return [row[0] for row in cursor.fetchall()]


def _policies_read_per_row(cursor, tables: list[str]) -> list[tuple[str, str, str]]:
    """(table, policy, USING ... WITH CHECK ...) for each policy of these tables that reads a
    setting in a subquery, in the form that reads it per row: Citus refuses subqueries in the
    policies of distributed tables. The same rows pass (docs/adr/0042)."""
    cursor.execute("""
        SELECT tablename, policyname FROM pg_policies
        WHERE schemaname = 'public' AND tablename = ANY(%s) AND (qual LIKE %s OR with_check LIKE %s)
        ORDER BY 1, 2
    """, [tables, "%SELECT%", "%SELECT%"])
    rewritten = []
    for table, name in cursor.fetchall():
        if name == f"{table}_tenant_isolation":
            predicate = tenant_predicate("id" if table == "organizations" else TENANT_COLUMN, per_row=True)
        elif name == "embedding_models_service_account":
            predicate = f"({PER_ROW_SERVICE_ACCOUNT_PREDICATE})"
        else:
            raise RuntimeError(f"policy {name} on {table} has a subquery, which Citus refuses: "
                               "rewrite it with settings alone (docs/adr/0042)")
        rewritten.append((table, name, f"USING {predicate} WITH CHECK {predicate}"))
    return rewritten


def _owner_not_forced(cursor, tables: list[str]) -> None:
    """Row-level security no longer forced on the owner of these tables (it still holds every
    other role, the application's included). On one node it is forced on the owner too, so a
    migration or maintenance command is held by the tenant policies like a request. A cluster
    cannot keep that: a shard move or split that lets writes go on (logical replication)
    applies the changes made meanwhile as the table's owner, and PostgreSQL refuses to
    replicate into a table whose row-level security holds that role ("cannot replicate into
    relation with row-level security enabled"), so the move never catches up; and the first
    copy of a table into its shards is a COPY, which it refuses too (docs/adr/0042). So on a
    cluster the owner, which serves no request, reads and writes every row."""
    for table in tables:
        cursor.execute(sql.SQL("ALTER TABLE {} NO FORCE ROW LEVEL SECURITY").format(
            sql.Identifier(table)).as_string(None))


def _forced_row_security(cursor, tables: list[str]) -> list[str]:
    cursor.execute("""
        SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = 'public' AND c.relname = ANY(%s) AND c.relforcerowsecurity ORDER BY 1
    """, [tables])
    return [row[0] for row in cursor.fetchall()]


def _held_foreign_keys(cursor, reference_tables: list[str]) -> list[tuple[str, str, str]]:
    """(table, constraint, definition) of each foreign key from another table to one of these."""
    if not reference_tables:
        return []
    cursor.execute("""
        SELECT child.relname, k.conname, pg_get_constraintdef(k.oid) FROM pg_constraint k
        JOIN pg_class child ON child.oid = k.conrelid JOIN pg_class parent ON parent.oid = k.confrelid
        JOIN pg_namespace n ON n.oid = child.relnamespace
        WHERE k.contype = 'f' AND n.nspname = 'public' AND parent.relname = ANY(%s)
          AND NOT child.relname = ANY(%s) AND child.relname IN (
              SELECT c.relname FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
              WHERE a.attname = %s AND NOT a.attisdropped)
        ORDER BY 1, 2
    """, [reference_tables, reference_tables, TENANT_COLUMN])
    return cursor.fetchall()


def nodes(using: str = "owner") -> list[dict]:
    """The cluster's nodes as Citus knows them, the coordinator first: each one's name (host,
    or socket folder) and port, role, and whether Citus counts it active and places shards on it."""
    with connections[using].cursor() as cursor:
        cursor.execute("""
            SELECT nodename, nodeport, groupid = 0 AS coordinator, isactive, shouldhaveshards
            FROM pg_dist_node WHERE noderole = 'primary' ORDER BY groupid, nodeid
        """)
        return [{"name": name, "port": port, "role": "coordinator" if coordinator else "worker",
                 "active": active, "holds_shards": shards}
                for name, port, coordinator, active, shards in cursor.fetchall()]


def status(using: str = "owner") -> dict:
    """The nodes, and each table's kind and each node's rows of it (read as the service
    account: the counts cross every organisation)."""
    placements = placed(using)
    tables = []
    with transaction.atomic(using=using), connections[using].cursor() as cursor:
        cursor.execute("SET LOCAL app.service_account = 'on'")
        cursor.execute("""
            SELECT table_name::text, nodename || ':' || nodeport, array_agg(shard_name::text ORDER BY shardid)
            FROM citus_shards GROUP BY 1, 2 ORDER BY 1, 2
        """)
        shards: dict[str, dict[str, list[str]]] = {}
        for table, node, names in cursor.fetchall():
            shards.setdefault(table, {})[node] = names
        for placement in plan(using):
            entry = {"table": placement.table, "kind": placements.get(placement.table, Placement(placement.table, "local")).kind}
            if entry["kind"] == "distributed":
                entry["column"] = placements[placement.table].column
                # Counted per organisation across the shards, then each organisation's count
                # put on the node of its shard, on the coordinator.
                cursor.execute(
                    sql.SQL("WITH counted AS MATERIALIZED (SELECT {column} AS key, count(*) AS n FROM {table} GROUP BY 1) "
                            "SELECT s.nodename || ':' || s.nodeport, sum(c.n)::bigint FROM counted c "
                            "JOIN citus_shards s ON s.table_name = {name}::regclass "
                            "AND s.shardid = get_shard_id_for_distribution_column({name}, c.key) GROUP BY 1").format(
                        column=sql.Identifier(entry["column"]), table=sql.Identifier(placement.table),
                        name=sql.Literal(placement.table)).as_string(None))
                counted = dict(cursor.fetchall())
                entry["rows_by_node"] = {node: counted.get(node, 0) for node in shards.get(placement.table, {})}
                entry["shards"] = sum(len(names) for names in shards.get(placement.table, {}).values())
            tables.append(entry)
    return {"nodes": nodes(using), "tables": tables, "isolated_organizations": isolated_organizations(using)}


# --------------------------------------------------------------------------- operations
# Moving shard groups between nodes while the product runs (docs/adr/0042, "Operations").
# Every shard move and split copies a shard group; how writes to it are held meanwhile is
# Citus's shard_transfer_mode: "block_writes" (COPY; writes to that one shard group wait until
# it is copied, then go to its new place) or "force_logical" (logical replication; writes go on
# and only wait for the final switch; needs wal_level = logical on every node). "auto" is
# logical when every table of the group has a replica identity, and refuses otherwise.
TRANSFER_MODES = ("auto", "force_logical", "block_writes")


def _transfer_mode(mode: str) -> str:
    if mode not in TRANSFER_MODES:
        raise ValueError(f"shard transfer mode must be one of {', '.join(TRANSFER_MODES)}, not {mode!r}")
    return mode


def _moves_every_row(cursor) -> None:
    """Refuse unless row-level security hides no row from the current role: a superuser, a
    BYPASSRLS role, or the owner of every distributed table (on a cluster no longer held by
    its policies, _owner_not_forced). Citus copies a shard's rows to its new place as the role
    that asked; as the runtime role the copy would read no row, and the shard would arrive
    empty, every row of the organisations in it lost (checked: docs/adr/0042)."""
    cursor.execute("""
        SELECT r.rolsuper OR r.rolbypassrls OR NOT EXISTS (
            SELECT 1 FROM pg_dist_partition p JOIN pg_class c ON c.oid = p.logicalrelid
            WHERE c.relowner <> r.oid OR c.relforcerowsecurity)
        FROM pg_roles r WHERE r.rolname = current_user
    """)
    if not cursor.fetchone()[0]:
        raise PermissionError("moving or splitting shards copies their rows as the current role, which row-level "
                              "security would show none of: run it as the tables' owner or a superuser")


def rebalance(cursor, *, transfer_mode: str = "auto", progress: Callable[[int, int], None] | None = None) -> int:
    """Spread the shard groups evenly over the workers that hold shards (a worker added since
    gets its share), in the background jobs Citus runs (a move cancelled for a deadlock is
    tried again there), and wait for them; progress(moves done, moves). Returns the number
    of shard moves. The reference tables are copied to new workers first. `cursor`: of a
    connection to the coordinator as the tables' owner or a superuser, in autocommit
    (_moves_every_row)."""
    _moves_every_row(cursor)
    cursor.execute("SELECT count(*) FROM get_rebalance_table_shards_plan()")
    moves = cursor.fetchone()[0]
    if not moves:
        return 0
    cursor.execute("SELECT citus_rebalance_start(shard_transfer_mode => %s)", [_transfer_mode(transfer_mode)])
    while progress:
        cursor.execute("SELECT state, details FROM citus_rebalance_status() ORDER BY job_id DESC LIMIT 1")
        state, details = cursor.fetchone()
        if isinstance(details, str):  # Django's cursor leaves jsonb as text
            details = json.loads(details)
        counts = (details or {}).get("task_state_counts", {})
        progress(counts.get("done", 0), sum(counts.values()) or moves)
        if state not in ("scheduled", "running", "cancelling", "failing"):
            break
        time.sleep(2)
    cursor.execute("SELECT citus_rebalance_wait()")  # raises if a move failed for good
    _drop_orphans(cursor)
    return moves


# A move or split whose final switch the cluster cancels to break a distributed deadlock with
# requests (their writes wait on the switch's locks while it waits on theirs) is tried again,
# as Citus's own rebalancer does with its tasks.
OPERATION_ATTEMPTS = 5


def _retried(cursor, statement: str, params: list, *, fetch: bool = True):
    """Run one shard operation, again after a pause while the cluster ends it for a deadlock;
    its first row (when `fetch`)."""
    for attempt in range(1, OPERATION_ATTEMPTS + 1):
        try:
            cursor.execute(statement, params)
            return cursor.fetchone() if fetch else None
        except Exception as exc:
            if not contended(exc) or attempt == OPERATION_ATTEMPTS:
                raise
            time.sleep(attempt)


def _drop_orphans(cursor) -> None:
    """Drop now what a move or split left behind (the old placements, replication slots and
    subscriptions), which Citus's maintenance daemon would otherwise drop some seconds later,
    while whatever runs next (an operator's next step, a TRUNCATE) may be taking the same
    locks: the two can meet in a distributed deadlock. The disk is freed by the time the
    command says it is done."""
    _retried(cursor, "CALL citus_cleanup_orphaned_resources()", [], fetch=False)


def move_shard_group(cursor, shard: int, *, node: str, port: int, transfer_mode: str = "auto") -> bool:
    """Move the shard group of `shard` (every colocated table's) to the worker at node:port;
    False when it is there already. `cursor` as for rebalance."""
    _moves_every_row(cursor)
    cursor.execute("SELECT nodename, nodeport FROM citus_shards WHERE shardid = %s", [shard])
    source = cursor.fetchone()
    if tuple(source) == (node, port):
        return False
    _retried(cursor, "SELECT citus_move_shard_placement(%s, %s, %s, %s, %s, shard_transfer_mode => %s)",
             [shard, *source, node, port, _transfer_mode(transfer_mode)])
    _drop_orphans(cursor)
    return True


def isolate_organization(cursor, org_id, *, transfer_mode: str = "block_writes") -> int:
    """Give one organisation a shard group of its own (isolate_tenant_to_new_shard on every
    colocated table, CASCADE): its rows, and only its, in one shard of each table, which can then
    be moved to a node of its own (move_shard_group). Returns the new shard of `memories`.
    Already alone in its shards: returns that shard, and nothing moves. `cursor` as for
    rebalance. By default the split holds the group's writes while it copies: its non-blocking
    form (logical replication through Citus's split decoder) crashed a worker under writes
    (docs/adr/0042); a move, which is logical by default, lets them go on."""
    _moves_every_row(cursor)
    cursor.execute("""
        SELECT s.shardid, s.shardminvalue::bigint = s.shardmaxvalue::bigint FROM pg_dist_shard s
        WHERE s.shardid = get_shard_id_for_distribution_column('memories', %s::uuid)
    """, [str(org_id)])
    shard, alone = cursor.fetchone()
    if alone:
        return shard
    misread = columns_skipped_before_distribution_column(cursor, org_id)
    if misread:
        raise RuntimeError(
            f"{', '.join(misread)} have a generated or dropped column before org_id, which Citus's split "
            "would misread: move the shard group to another node first (citus_move_shard_placement makes "
            "its shards again without the gap), then isolate it (docs/adr/0042)")
    shard = _retried(cursor, "SELECT isolate_tenant_to_new_shard('memories', %s::uuid, 'CASCADE', "
                             "shard_transfer_mode => %s)", [str(org_id), _transfer_mode(transfer_mode)])[0]
    _drop_orphans(cursor)
    return shard


def isolated_organizations(using: str = "owner") -> list[dict]:
    """Each organisation with a shard group of its own (`memories`' shard holds one hash value,
    which only isolate_organization makes), and the node holding it."""
    with transaction.atomic(using=using), connections[using].cursor() as cursor:
        cursor.execute("SET LOCAL app.service_account = 'on'")
        cursor.execute("""
            SELECT o.id, s.shardid, p.nodename || ':' || p.nodeport
            FROM pg_dist_shard s JOIN pg_dist_shard_placement p ON p.shardid = s.shardid
            JOIN organizations o ON get_shard_id_for_distribution_column('memories', o.id) = s.shardid
            WHERE s.logicalrelid = 'memories'::regclass AND s.shardminvalue::bigint = s.shardmaxvalue::bigint
            ORDER BY s.shardid
        """)
        return [{"org_id": str(org_id), "shard": shard, "node": node} for org_id, shard, node in cursor.fetchall()]
