"""Schema operations Django's model layer cannot express, as reversible migration operations.

For every tenant table:
  * the primary key is (org_id, id), with a plain index on id for cross-tenant maintenance;
  * every reference to another tenant row is a composite foreign key (org_id, x) -> (org_id, id),
    so no row can point into another organisation, and every unique constraint and foreign
    key carries org_id, the distribution column a Citus scale-out needs (docs/adr/0032);
  * row-level security is ENABLEd and FORCEd, with one policy for reads and writes alike.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db import migrations

# Each setting is read in a subquery, which PostgreSQL evaluates once per statement (an
# InitPlan): written as plain calls, both were evaluated again for every row a statement read.
# At 1M memories that was 2.7 of the 11.4 ms a 10,000-row tenant's exact vector search took
# (memories migration 0010, docs/adr/0035).
ORG_PREDICATE = "(SELECT nullif(current_setting('app.current_org_id', true), '')::uuid)"
SERVICE_ACCOUNT_PREDICATE = "(SELECT current_setting('app.service_account', true) = 'on')"
# The same test as the policies before that migration wrote it, read for every row.
PER_ROW_ORG_PREDICATE = "nullif(current_setting('app.current_org_id', true), '')::uuid"
PER_ROW_SERVICE_ACCOUNT_PREDICATE = "current_setting('app.service_account', true) = 'on'"


def as_service_account(sql: str) -> str:
    """A data migration's statements, run as the service account: row-level security is forced
    on the owner too, so without it an UPDATE of a tenant table sees no row."""
    return (f"SET LOCAL app.service_account = 'on';\n{sql.strip()}\n"
            "SET LOCAL app.service_account = '';")


def tenant_predicate(column: str = "org_id", *, per_row: bool = False) -> str:
    """The row belongs to the transaction's organisation, or the service account is acting."""
    if per_row:
        return f"({column} = {PER_ROW_ORG_PREDICATE} OR {PER_ROW_SERVICE_ACCOUNT_PREDICATE})"
    return f"({column} = {ORG_PREDICATE} OR {SERVICE_ACCOUNT_PREDICATE})"


def tenant_policy_sql(table: str, column: str = "org_id") -> tuple[str, str]:
    predicate = tenant_predicate(column)
    forward = f"""
        ALTER TABLE {table} ENABLE ROW LEVEL SECURITY;
        ALTER TABLE {table} FORCE ROW LEVEL SECURITY;
        CREATE POLICY {table}_tenant_isolation ON {table}
            USING {predicate}
            WITH CHECK {predicate};
    """
    reverse = f"""
        DROP POLICY {table}_tenant_isolation ON {table};
        ALTER TABLE {table} NO FORCE ROW LEVEL SECURITY;
        ALTER TABLE {table} DISABLE ROW LEVEL SECURITY;
    """
    return forward, reverse


def enable_tenant_rls(table: str, column: str = "org_id") -> migrations.RunSQL:
    forward, reverse = tenant_policy_sql(table, column)
    return migrations.RunSQL(forward, reverse)


def tenant_settings_read_once(table: str, column: str = "org_id") -> migrations.RunSQL:
    """Rewrite a tenant policy made with the settings read per row to read them once per
    statement (the same rows pass either way); reversed, back to per row."""

    def alter(predicate: str) -> str:
        return f"ALTER POLICY {table}_tenant_isolation ON {table} USING {predicate} WITH CHECK {predicate};"

    return migrations.RunSQL(alter(tenant_predicate(column)), alter(tenant_predicate(column, per_row=True)))


def tenant_keys(table: str) -> migrations.RunSQL:
    """Make (org_id, id) the primary key, keep id findable on its own, and tie org_id to its
    organisation (deleting an organisation deletes everything it owns)."""
    return migrations.RunSQL(
        f"""
        ALTER TABLE {table} DROP CONSTRAINT {table}_pkey;
        ALTER TABLE {table} ADD CONSTRAINT {table}_pkey PRIMARY KEY (org_id, id);
        CREATE INDEX {table}_id ON {table} (id);
        ALTER TABLE {table} ADD CONSTRAINT {table}_org_id_fkey
            FOREIGN KEY (org_id) REFERENCES organizations (id) ON DELETE CASCADE;
        """,
        f"""
        ALTER TABLE {table} DROP CONSTRAINT {table}_org_id_fkey;
        DROP INDEX {table}_id;
        ALTER TABLE {table} DROP CONSTRAINT {table}_pkey;
        ALTER TABLE {table} ADD CONSTRAINT {table}_pkey PRIMARY KEY (id);
        """,
    )


# The references that were ON DELETE SET NULL (x) until memories 0030 made them NO ACTION: the
# migrations before it still declare them so, and generate the SQL they always did. No other
# tenant reference may be SET NULL or SET DEFAULT: a Citus cluster distributed by org_id
# refuses either on a foreign key that carries org_id. A reference that outlives its row is
# NO ACTION, emptied by whoever deletes the row (memory_platform.references).
HISTORICAL_SET_NULL = frozenset({
    ("sessions", ("agent_id",)),
    ("memories", ("session_id",)),
    ("memories", ("superseded_by",)),
    ("memories", ("merged_into",)),
    ("memory_versions", ("changed_by_agent_id",)),
    ("retrieval_events", ("agent_id",)),
    ("retrieval_events", ("replay_of",)),
    ("erasures", ("requested_by_agent_id",)),
})
TENANT_ON_DELETE = ("CASCADE", "NO ACTION")


@dataclass(frozen=True)
class TenantReference:
    """(org_id, *columns) -> parent(org_id, *parent_columns): a reference inside one organisation.

    on_delete: CASCADE (the row goes with its parent) or NO ACTION (the parent cannot go while
    the row refers to it: a nullable reference that outlives its row, which the deletion empties
    first, memory_platform.references). "SET NULL" is history: see HISTORICAL_SET_NULL.
    """

    columns: tuple[str, ...]
    parent: str
    on_delete: str = "CASCADE"
    parent_columns: tuple[str, ...] = field(default=("id",))
    on_update: str = "NO ACTION"

    def __post_init__(self):
        if self.on_delete not in (*TENANT_ON_DELETE, "SET NULL"):
            raise ValueError(f"a tenant reference is ON DELETE {' or '.join(TENANT_ON_DELETE)}, not {self.on_delete}")

    def constraint_name(self, table: str) -> str:
        return f"{table}_{'_'.join(self.columns)}_fkey"

    def key_sql(self) -> str:
        columns = ", ".join(("org_id", *self.columns))
        parent_columns = ", ".join(("org_id", *self.parent_columns))
        return f"FOREIGN KEY ({columns}) REFERENCES {self.parent} ({parent_columns})"

    def actions_sql(self, table: str) -> str:
        on_delete = self.on_delete
        if on_delete == "SET NULL":
            if (table, self.columns) not in HISTORICAL_SET_NULL:
                raise ValueError(
                    f"{table}({', '.join(self.columns)}): a tenant reference cannot be ON DELETE SET NULL, which "
                    "Citus refuses with org_id in the key; make it NO ACTION and clear it in "
                    "memory_platform.references")
            # Never null org_id: only the reference itself (PostgreSQL 15+).
            on_delete = f"SET NULL ({', '.join(self.columns)})"
        return f"ON DELETE {on_delete} ON UPDATE {self.on_update}"


def tenant_foreign_key(table: str, reference: TenantReference) -> migrations.RunSQL:
    name = reference.constraint_name(table)
    columns = ", ".join(("org_id", *reference.columns))
    return migrations.RunSQL(
        f"""
        ALTER TABLE {table} ADD CONSTRAINT {name}
            {reference.key_sql()}
            {reference.actions_sql(table)};
        CREATE INDEX IF NOT EXISTS {name}_idx ON {table} ({columns});
        """,
        f"DROP INDEX IF EXISTS {name}_idx; ALTER TABLE {table} DROP CONSTRAINT {name};",
    )


def tenant_reference_replaced(table: str, before: TenantReference, after: TenantReference) -> migrations.RunSQL:
    """Replace a tenant reference's constraint by another of the same columns and name (its
    index stays); reversed, back."""
    assert (before.columns, before.parent) == (after.columns, after.parent)
    name = after.constraint_name(table)

    def replace(reference: TenantReference) -> str:
        return (f"ALTER TABLE {table} DROP CONSTRAINT {name}, "
                f"ADD CONSTRAINT {name} {reference.key_sql()} {reference.actions_sql(table)};")

    return migrations.RunSQL(replace(after), replace(before))


def user_foreign_key(table: str, column: str, on_delete: str) -> migrations.RunSQL:
    """A reference to an operator account (auth_user is not a tenant table)."""
    name = f"{table}_{column}_fkey"
    return migrations.RunSQL(
        f"""
        ALTER TABLE {table} ADD CONSTRAINT {name}
            FOREIGN KEY ({column}) REFERENCES auth_user (id) ON DELETE {on_delete};
        CREATE INDEX IF NOT EXISTS {name}_idx ON {table} ({column});
        """,
        f"DROP INDEX IF EXISTS {name}_idx; ALTER TABLE {table} DROP CONSTRAINT {name};",
    )


SET_UPDATED_AT_FUNCTION = migrations.RunSQL(
    """
    CREATE FUNCTION set_updated_at() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        -- clock_timestamp(), not now(): a row updated later in the transaction that created it
        -- must not appear updated before it was created.
        NEW.updated_at := clock_timestamp();
        RETURN NEW;
    END
    $$;
    """,
    "DROP FUNCTION set_updated_at();",
)

# Raise when an UPDATE changes anything but the columns named as trigger arguments (the
# references a deletion elsewhere empties: memory_platform.references, and auth_user's ON
# DELETE SET NULL). Memories 0034 redefines it to name the table, not the shard, on Citus.
FORBID_REWRITE_FUNCTION = migrations.RunSQL(
    """
    CREATE FUNCTION forbid_rewrite() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF (to_jsonb(NEW) - TG_ARGV) IS DISTINCT FROM (to_jsonb(OLD) - TG_ARGV) THEN
            RAISE EXCEPTION '% rows are immutable', TG_TABLE_NAME
                USING ERRCODE = 'integrity_constraint_violation';
        END IF;
        RETURN NEW;
    END
    $$;
    """,
    "DROP FUNCTION forbid_rewrite();",
)


def maintain_updated_at(table: str) -> migrations.RunSQL:
    return migrations.RunSQL(
        f"CREATE TRIGGER {table}_updated_at BEFORE UPDATE ON {table} "
        f"FOR EACH ROW EXECUTE FUNCTION set_updated_at();",
        f"DROP TRIGGER {table}_updated_at ON {table};",
    )


def append_only(table: str, *clearable_columns: str) -> migrations.RunSQL:
    arguments = ", ".join(f"'{column}'" for column in clearable_columns)
    return migrations.RunSQL(
        f"CREATE TRIGGER {table}_append_only BEFORE UPDATE ON {table} "
        f"FOR EACH ROW EXECUTE FUNCTION forbid_rewrite({arguments});",
        f"DROP TRIGGER {table}_append_only ON {table};",
    )
