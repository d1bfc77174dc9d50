"""The tenant of the current transaction, as PostgreSQL's row-level security policies read it.

Every policy compares a table's org_id with
    nullif(current_setting('app.current_org_id', true), '')::uuid
and lets rows through for a maintenance job only when app.service_account is 'on'. Both are
set with SET LOCAL: they live exactly as long as the transaction, so a pooled connection never
carries one request's tenant into the next, and on a Citus cluster they travel with the
transaction to every worker it reaches (memory_platform.database.set_local).
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

from django.db import connections, transaction

from memory_platform.database import set_local

ORG_SETTING = "app.current_org_id"
SERVICE_ACCOUNT_SETTING = "app.service_account"
# Opens one api_keys row to authentication (tenants/authentication.py). Setting a tenant
# always closes it again.
API_KEY_HASH_SETTING = "app.api_key_hash"
# Opens the signed-in operator's own memberships to reads: the console's organisation switch
# (tenants/migrations/0004).
USER_SETTING = "app.current_user_id"
# Opens the organisations those memberships name, and nothing else of them (tenants/migrations/0010).
MEMBER_ORGS_SETTING = "app.member_org_ids"


class TenantContextError(RuntimeError):
    """The tenant was set outside a transaction, where it would vanish at once."""


def in_transaction(using: str, what: str):
    connection = connections[using]
    if not connection.in_atomic_block:
        raise TenantContextError(f"{what} can only be set inside a transaction (transaction.atomic)")
    return connection


def tenant_settings(org_id: str, service_account: str = "") -> dict[str, str]:
    """The settings that make org_id the tenant (activate_org), for set_local."""
    return {ORG_SETTING: org_id, SERVICE_ACCOUNT_SETTING: service_account, API_KEY_HASH_SETTING: ""}


def _set(using: str, org_id: str, service_account: str) -> None:
    connection = in_transaction(using, "the tenant")
    with connection.cursor() as cursor:
        set_local(cursor, tenant_settings(org_id, service_account))


def _get(using: str) -> tuple[str, str]:
    with connections[using].cursor() as cursor:
        cursor.execute(
            "SELECT coalesce(current_setting(%s, true), ''), coalesce(current_setting(%s, true), '')",
            [ORG_SETTING, SERVICE_ACCOUNT_SETTING],
        )
        return cursor.fetchone()


def activate_org(org_id: uuid.UUID | str, *, using: str = "default") -> None:
    """Make org_id the tenant for the rest of the current transaction."""
    _set(using, str(uuid.UUID(str(org_id))), "")


def activate_user(user_id: int | None, *, using: str = "default") -> None:
    """Let the rest of the current transaction read this operator's memberships in every
    organisation (and nothing else of those organisations)."""
    connection = in_transaction(using, "the operator")
    with connection.cursor() as cursor:
        set_local(cursor, {USER_SETTING: "" if user_id is None else str(int(user_id))})


def activate_member_orgs(org_ids: Iterable[uuid.UUID | str], *, using: str = "default") -> None:
    """Let the rest of the current transaction read these organisations' own rows (their name,
    slug, state): the ones the operator's memberships name, read first under activate_user."""
    connection = in_transaction(using, "the operator's organisations")
    with connection.cursor() as cursor:
        set_local(cursor, {MEMBER_ORGS_SETTING: ",".join(str(uuid.UUID(str(org_id))) for org_id in org_ids)})


def deactivate(*, using: str = "default") -> None:
    _set(using, "", "")


def current_org_id(*, using: str = "default") -> uuid.UUID | None:
    org_id, _ = _get(using)
    return uuid.UUID(org_id) if org_id else None


@contextmanager
def _scoped(org_id: str, service_account: str, using: str) -> Iterator[None]:
    with transaction.atomic(using=using):
        previous = _get(using)
        _set(using, org_id, service_account)
        yield
        # Restore the enclosing scope (if the block raised, the savepoint rollback already has).
        _set(using, *previous)


def tenant_context(org_id: uuid.UUID | str, *, using: str = "default"):
    """Run a block as organisation org_id: the boundary of a command, a job or a test
    (requests get theirs from authentication or the console's access check). Services and
    selectors assume it is set: they do not set it themselves.

        with tenant_context(memory.org_id):
            ...
    """
    return _scoped(str(uuid.UUID(str(org_id))), "", using)


def tenant_job(func):
    """The boundary of a job: run func(org_id=..., ...) as that organisation, in one
    transaction. Jobs carry the organisation's id, never its context.

        @tenant_job
        def embed_memories(*, org_id, memory_ids): ...
    """

    @functools.wraps(func)
    def run(*args, org_id, **kwargs):
        with tenant_context(org_id):
            return func(*args, org_id=org_id, **kwargs)

    return run


def service_account(*, using: str = "default"):
    """Run a block with cross-tenant access, for maintenance jobs and administration only."""
    return _scoped("", "on", using)
