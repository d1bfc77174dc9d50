"""The confirmation that erase_namespace's second call carries: what its first call counted,
signed, so that only an erasure the caller was told the size of, and asked for again, happens.

The token is Django's signed, timestamped JSON (the SECRET_KEY every worker shares: the MCP
server keeps no state between calls). It holds the number of memories counted and the digest of
which they were (memories.lifecycle.erasure.memories_digest), and it is signed for one
organisation, one API key and one namespace: given for another, altered, or older than
LIFETIME_SECONDS, it is refused. The erasure itself then checks, in its own transaction, that the
namespace still holds exactly the memories counted (use_cases.lifecycle.erase's
expected_digest); once they are erased, the token names memories that are gone, so it serves once.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.core import signing

from memories.access import Caller
from memories.errors import InvalidInput

LIFETIME_SECONDS = 10 * 60
TOKEN_MAX_CHARS = 500  # a real one is about 120
SALT = "memory_platform.mcp.erase_namespace"


@dataclass(frozen=True)
class Counted:
    memories: int
    digest: str


def _salt(caller: Caller, namespace: str) -> str:
    return f"{SALT}:{caller.org_id}:{caller.api_key_id}:{namespace}"


def issue(caller: Caller, namespace: str, counted: Counted) -> str:
    return signing.dumps({"memories": counted.memories, "digest": counted.digest}, salt=_salt(caller, namespace))


def read(caller: Caller, namespace: str, token: str) -> Counted:
    """What the first call counted; InvalidInput naming `confirmation` when the token is not one
    this caller was given for this namespace within LIFETIME_SECONDS."""
    # The messages do not say "confirmation": the tool error names the field before them.
    again = "call erase_namespace without one to count again"
    if len(token) > TOKEN_MAX_CHARS:
        raise InvalidInput(f"not one that erase_namespace gave: {again}", field="confirmation")
    try:
        counted = signing.loads(token, salt=_salt(caller, namespace), max_age=LIFETIME_SECONDS)
    except signing.SignatureExpired:
        raise InvalidInput(f"older than {LIFETIME_SECONDS // 60} minutes: {again}", field="confirmation") from None
    except signing.BadSignature:
        raise InvalidInput(f"not given to this API key for this namespace: {again}", field="confirmation") from None
    return Counted(memories=counted["memories"], digest=counted["digest"])
