"""API-key authentication: `Authorization: Bearer <key>` (or `x-api-key: <key>`, the header
LangGraph's SDK sends) -> one organisation and one agent.

Runs inside the request's transaction (TenantTransactionMiddleware) before the view touches
any tenant data. The key row is found through the api_keys_lookup_by_hash policy (visible
only to whoever can compute its hash), then the organisation becomes the tenant.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from django.db import connection
from django.utils import timezone
from rest_framework import authentication, exceptions, permissions

from memories.access import Caller
from memories.errors import OutOfReach
from memory_platform.database import set_local
from tenants import context, throttles
from tenants.models import Agent, ApiKey, Organization
from tenants.services import api_key_hash, api_key_org

LAST_USED_RESOLUTION = timedelta(minutes=1)  # at most one write per key per minute


@dataclass(frozen=True)
class AgentPrincipal:
    """An API key's agent: what request.user is for agents. `caller` is what every use case
    takes (memories.access.Caller), built here once for every door that takes a key."""

    agent: Agent
    api_key: ApiKey
    caller: Caller
    is_authenticated: bool = True
    is_anonymous: bool = False

    @property
    def org(self) -> Organization:
        return self.agent.org  # read when first asked for: requests need only its id

    @property
    def org_id(self):
        return self.agent.org_id

    @property
    def agent_id(self):
        return self.agent.id


# The two reads of every API request, each sent with the settings it reads under in one round
# trip (set_local's `then`), the row made an instance as the ORM would (_instance): built and
# compiled by the ORM they were about half of authentication's 6 ms p50 on a slow machine
# (docs/adr/0035), and the settings cost a round trip each (docs/adr/0066).
def _columns(model, alias: str = "") -> str:
    return ", ".join(f"{alias}{'.' if alias else ''}{field.column}" for field in model._meta.concrete_fields)


KEY_SQL = f"SELECT {_columns(ApiKey)} FROM api_keys WHERE key_hash = %s ORDER BY created_at DESC LIMIT 1"
ORG_KEY_SQL = f"SELECT {_columns(ApiKey)} FROM api_keys WHERE org_id = %s AND key_hash = %s"
# The agent's organisation's redaction policy comes with it: a search's event redacts by it
# (Caller.redactor; writes still read it themselves), at no round trip of its own.
ACTIVE_AGENT_SQL = f"""
    SELECT {_columns(Agent, "a")}, o.redact_personal_data
    FROM agents a JOIN organizations o ON o.id = a.org_id
    WHERE a.org_id = %s AND a.id = %s AND a.is_active AND o.is_active
"""


def _instance(model, row):
    """A row that begins with `model`'s columns (in _columns' order) as an instance, or None."""
    if row is None:
        return None
    fields = model._meta.concrete_fields
    return model.from_db(connection.alias, [field.attname for field in fields], row[:len(fields)])


def _find_key(key: str) -> ApiKey | None:
    """The key row with this key's hash, visible through the lookup policy until the next
    statement that sets a tenant closes it again: among the keys of the organisation the key
    names (one shard of a cluster), or, for a key issued before keys named one, among all."""
    key_hash = api_key_hash(key)
    org_id = api_key_org(key)
    with connection.cursor() as cursor:
        set_local(cursor, {context.API_KEY_HASH_SETTING: key_hash},
                  *((KEY_SQL, [key_hash]) if org_id is None else (ORG_KEY_SQL, [org_id, key_hash])))
        return _instance(ApiKey, cursor.fetchone())


def _active_agent(api_key: ApiKey) -> tuple[Agent | None, bool]:
    """The key's agent, if it and its organisation are active, and whether the organisation
    redacts personal data, with the organisation made the tenant of the transaction in the
    same round trip (context.activate_org; it also closes the key lookup)."""
    context.in_transaction("default", "the tenant")
    with connection.cursor() as cursor:
        set_local(cursor, context.tenant_settings(str(api_key.org_id)), ACTIVE_AGENT_SQL,
                  [api_key.org_id, api_key.agent_id])
        row = cursor.fetchone()
    return _instance(Agent, row), bool(row and row[-1])


class ApiKeyAuthentication(authentication.BaseAuthentication):
    keyword = "Bearer"
    # The Authorization schemes a key comes in (a door in another product's shape may add its own:
    # Mem0's client sends `Token`).
    schemes: tuple[str, ...] = ("Bearer",)

    def authenticate_header(self, request) -> str:
        return f'{self.keyword} realm="api"'  # makes DRF answer 401, not 403

    def authenticate(self, request):
        try:
            principal = self._authenticate_key(request)
        except exceptions.AuthenticationFailed:
            throttles.unauthenticated_request_counted(request)  # 429 instead, past the address's limit
            raise
        if principal is None:
            throttles.unauthenticated_request_counted(request)
        return principal

    def _presented_key(self, request) -> str | None:
        """The key the request carries: in `Authorization: Bearer` (or another of `schemes`), or in
        `x-api-key` (never two different keys: which one would the caller mean?)."""
        header = authentication.get_authorization_header(request)
        bearer = authorization_key(header, self.schemes) if header else None
        plain = request.META.get("HTTP_X_API_KEY", "").strip() or None
        if bearer and plain and bearer != plain:
            raise exceptions.AuthenticationFailed("Authorization and x-api-key name different API keys")
        return bearer or plain

    def _authenticate_key(self, request):
        key = self._presented_key(request)
        if key is None:
            return None
        principal = authenticate_key(key)
        return principal, principal.api_key


def authorization_key(header: bytes, schemes: tuple[str, ...] = ("Bearer",)) -> str:
    """The API key of an `Authorization: <scheme> <API key>` header in one of the schemes
    (any case); AuthenticationFailed, naming the format, if the header is not one."""
    try:
        scheme, key = header.decode("ascii").split()
    except (UnicodeDecodeError, ValueError):
        scheme, key = "", ""
    if scheme.lower() not in {name.lower() for name in schemes}:
        shapes = " or ".join(f"`{name} <API key>`" for name in schemes)
        raise exceptions.AuthenticationFailed(f"Authorization header must be {shapes}")
    return key


def bearer_key(header: bytes) -> str:
    """The API key of an `Authorization: Bearer <API key>` header; AuthenticationFailed if the
    header is not one."""
    return authorization_key(header)


def authenticate_bearer(header: bytes) -> AgentPrincipal:
    """authenticate_key of an `Authorization: Bearer <API key>` header (the MCP server's door)."""
    return authenticate_key(bearer_key(header))


def authenticate_key(key: str) -> AgentPrincipal:
    """The caller an API key names, its organisation made the tenant of the current
    transaction; AuthenticationFailed says why not. Every door that takes an API key (the REST
    API, with it in `Authorization: Bearer` or `x-api-key`; the MCP server) calls this one
    function."""
    api_key = _find_key(key)
    if api_key is None:
        raise exceptions.AuthenticationFailed("unknown API key")
    if api_key.revoked_at is not None:
        raise exceptions.AuthenticationFailed("this API key has been revoked")
    agent, redacts_personal_data = _active_agent(api_key)
    if agent is None:
        raise exceptions.AuthenticationFailed("the organisation or agent of this API key is disabled")
    now = timezone.now()
    if api_key.last_used_at is None or now - api_key.last_used_at > LAST_USED_RESOLUTION:
        ApiKey.objects.filter(pk=api_key.pk, org_id=api_key.org_id).update(last_used_at=now)
    return AgentPrincipal(agent=agent, api_key=api_key,
                          caller=Caller.of_key(api_key, redacts_personal_data=redacts_personal_data))


class KeyMayAct(permissions.IsAuthenticated):
    """An authenticated key; a read-only one's request that would write is refused before its
    body is read, whatever the body (the use cases refuse its writes too: this answers first).
    A view whose POST only reads (a search) says so with `reads_only = True`."""

    def has_permission(self, request, view) -> bool:
        if not super().has_permission(request, view):
            return False
        if (request.method not in permissions.SAFE_METHODS and not getattr(view, "reads_only", False)
                and request.user.caller.reach.read_only):
            raise OutOfReach("this API key is read-only")
        return True
