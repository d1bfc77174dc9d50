"""Finding organisations, agents and keys by what an operator types on a command line."""

from __future__ import annotations

import uuid

from django.core.management.base import CommandError
from django.db.models import Q

from tenants.context import service_account, tenant_context
from tenants.models import Agent, ApiKey, Organization


def _as_uuid(value: str) -> uuid.UUID | None:
    try:
        return uuid.UUID(value)
    except ValueError:
        return None


def uuid_or_error(value: str, what: str) -> uuid.UUID:
    """An id an operator typed, or an error that says which argument is not one."""
    as_id = _as_uuid(value)
    if as_id is None:
        raise CommandError(f"{what} must be an id like 3f1c9a52-..., not {value!r}")
    return as_id


def organization_find(identifier: str) -> Organization:
    """By slug or id; finding a tenant is cross-tenant work, done as the service account."""
    as_id = _as_uuid(identifier)
    with service_account():
        org = Organization.objects.filter(Q(slug=identifier) | (Q(pk=as_id) if as_id else Q())).first()
    if org is None:
        raise CommandError(f"no organisation with slug or id {identifier!r}")
    return org


def agent_find(org: Organization, identifier: str) -> Agent:
    as_id = _as_uuid(identifier)
    with tenant_context(org.id):
        agent = Agent.objects.filter(Q(name=identifier) | (Q(pk=as_id) if as_id else Q()), org=org).first()
    if agent is None:
        raise CommandError(f"{org.slug} has no agent named or numbered {identifier!r}")
    return agent


def api_key_find(org: Organization, identifier: str) -> ApiKey:
    as_id = _as_uuid(identifier)
    with tenant_context(org.id):
        keys = list(ApiKey.objects.filter(Q(prefix=identifier) | (Q(pk=as_id) if as_id else Q()), org=org)[:2])
    if not keys:
        raise CommandError(f"{org.slug} has no API key with id or prefix {identifier!r}")
    if len(keys) > 1:
        raise CommandError(f"prefix {identifier!r} matches several keys; use the key's id")
    return keys[0]
