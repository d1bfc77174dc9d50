"""Writes for tenancy: organisations, agents, API keys, memberships.

Like every service, these assume their caller's boundary set the context (docs/architecture.md,
"One tenant rule"): creating an organisation is cross-tenant work, done as the service account
(`with service_account():` in a command, Django admin's own context); the others act within
the organisation they name (`with tenant_context(org.id):`, or the console's access check).

What they store is redacted as any write's is (memories.intake.redaction): names and descriptions
have their secrets (and, by the organisation's policy, personal data) replaced; what identifies
(an organisation's slug, an agent's name, a key's namespaces) is refused instead, raising
IdentifierHoldsSecret (a ValueError), since two identifiers redacted alike would become one.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import secrets
import uuid

from django.db import transaction
from django.utils import timezone
from django.utils.text import slugify

from memories.intake.cleaning import SECRET_RULES
from memories.intake.redaction import Redactor, redactor_for
from tenants.models import Agent, ApiKey, Membership, Organization

API_KEY_PREFIX = "mp_"
DISPLAY_PREFIX_LENGTH = 11  # "mp_" and 8 characters of the secret
SECRET_LENGTH = 43  # secrets.token_urlsafe(32)
# A key ends with its organisation's id (16 bytes, base64url): authentication then looks for
# its hash among that organisation's keys only, on a Citus cluster one shard on one node,
# instead of asking every shard (docs/adr/0042). It tells nothing the key does not already
# open. Keys issued before have no such ending and are looked for everywhere.
ORG_PART_LENGTH = 22


def _org_part(org_id) -> str:
    return base64.urlsafe_b64encode(uuid.UUID(str(org_id)).bytes).rstrip(b"=").decode()


def api_key_org(key: str) -> uuid.UUID | None:
    """The organisation a key names at its end, or None (a key issued before keys named one,
    or not a key of this product at all)."""
    if not key.startswith(API_KEY_PREFIX) or len(key) != len(API_KEY_PREFIX) + SECRET_LENGTH + ORG_PART_LENGTH:
        return None
    try:
        return uuid.UUID(bytes=base64.urlsafe_b64decode(key[-ORG_PART_LENGTH:] + "=="))
    except (binascii.Error, ValueError):
        return None


def api_key_hash(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def organization_create(*, name: str, slug: str | None = None) -> Organization:
    """Create an organisation (as the service account: it is no tenant's yet, nor has a policy:
    the rules every organisation has apply)."""
    slug = slug or slugify(name)[:64]
    SECRET_RULES.check_identifier(slug, field="slug")
    return Organization.objects.create(name=SECRET_RULES.plain(name), slug=slug)


def organization_get_or_create(*, name: str, slug: str) -> tuple[Organization, bool]:
    SECRET_RULES.check_identifier(slug, field="slug")
    return Organization.objects.get_or_create(slug=slug, defaults={"name": SECRET_RULES.plain(name)})


def agent_create(*, org: Organization, name: str, description: str = "") -> Agent:
    redactor = redactor_for(org.id)
    redactor.check_identifier(name, field="name")
    return Agent.objects.create(org=org, name=name, description=redactor.plain(description))


def agent_get_or_create(*, org: Organization, name: str) -> tuple[Agent, bool]:
    redactor_for(org.id).check_identifier(name, field="name")
    return Agent.objects.get_or_create(org=org, name=name)


def api_key_namespaces(namespaces) -> list[str]:
    """Namespace prefixes a key is limited to, as stored: joined with '/', no empty segment."""
    cleaned = []
    for namespace in namespaces:
        segments = namespace.strip().strip("/").split("/")
        if not all(segment.strip() for segment in segments) or len(namespace) > 256:
            raise ValueError(f"{namespace!r} is not a namespace: segments joined with '/', none empty")
        cleaned.append("/".join(segments))
    return sorted(set(cleaned))


def api_key_reach(*, redactor: Redactor, namespaces) -> list[str]:
    """api_key_namespaces, none holding what the organisation's policy (redactor_for) would redact."""
    reach = api_key_namespaces(namespaces)
    for namespace in reach:
        redactor.check_identifier(namespace, field="namespaces")
    return reach


def api_key_new(*, agent: Agent, name: str = "", created_by=None, namespaces=(),
                read_only: bool = False) -> tuple[ApiKey, str]:
    """An unsaved key row for an agent, and the key itself (which is never stored).
    namespaces: prefixes the key is limited to (none: the whole organisation); read_only: no writes."""
    redactor = redactor_for(agent.org_id)
    reach = api_key_reach(redactor=redactor, namespaces=namespaces)
    key = API_KEY_PREFIX + secrets.token_urlsafe(32) + _org_part(agent.org_id)
    api_key = ApiKey(org_id=agent.org_id, agent=agent, name=redactor.plain(name), prefix=key[:DISPLAY_PREFIX_LENGTH],
                     key_hash=api_key_hash(key), created_by=created_by, namespaces=reach, read_only=read_only)
    return api_key, key


def api_key_issue(*, agent: Agent, name: str = "", created_by=None, namespaces=(),
                  read_only: bool = False) -> tuple[ApiKey, str]:
    """Issue a key for an agent. Returns the row and the key itself: show it once."""
    api_key, key = api_key_new(agent=agent, name=name, created_by=created_by, namespaces=namespaces,
                               read_only=read_only)
    api_key.save(force_insert=True)
    return api_key, key


@transaction.atomic
def api_key_revoke(*, api_key: ApiKey) -> ApiKey:
    if api_key.revoked_at is None:
        api_key.revoked_at = timezone.now()
        api_key.save(update_fields=["revoked_at"])
    return api_key


def membership_set(*, org: Organization, user, role: str) -> Membership:
    """Give an operator a role in an organisation (adding them, or changing their role)."""
    if role not in Membership.Role.values:
        raise ValueError(f"role must be one of {', '.join(Membership.Role.values)}")
    membership, _ = Membership.objects.update_or_create(org=org, user=user, defaults={"role": role})
    return membership


def operator_account(*, username: str) -> tuple[object, str | None]:
    """The console account with this username, created with a fresh random password (returned,
    to be shown once) if it does not exist yet."""
    from django.contrib.auth import get_user_model

    User = get_user_model()
    user = User.objects.filter(username=username).first()
    if user is not None:
        return user, None
    password = secrets.token_urlsafe(12)
    return User.objects.create_user(username=username, password=password), password
