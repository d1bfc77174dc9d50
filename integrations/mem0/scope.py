"""Where Mem0's entity ids point in the platform (docs/adr/0044). No database here.

- `user_id` is the namespace users/<user_id>: the boundary of that end user's data;
- `agent_id` is a label: users/<user_id>/agents/<agent_id> with a user, agents/<agent_id>
  without one (the agent's own memories, no user's);
- `run_id` is a session (its external_id) in that namespace; named alone, it is the
  namespace runs/<run_id> too.

So a request names at most one user, and reads, changes and erases under that user's namespace
only: what names no user reaches no user's memories. A read takes the namespace as a prefix: the
user's memories include those kept with an agent of theirs."""

from __future__ import annotations

from dataclasses import dataclass

USERS, AGENTS, RUNS = "users", "agents", "runs"
# Mem0's entity types (GET /v1/entities/, DELETE /v2/entities/<type>/<name>/), by the root
# label of the namespaces that hold them.
ENTITY_TYPES = {USERS: "user", AGENTS: "agent", RUNS: "run"}
ENTITY_ROOTS = {kind: root for root, kind in ENTITY_TYPES.items()}


@dataclass(frozen=True)
class Scope:
    namespace: str  # where a memory is written; read as a prefix (what lies under it too)
    run: str | None = None  # the external_id of the run's sessions in it


def scope_of(*, user_id: str | None = None, agent_id: str | None = None, run_id: str | None = None) -> Scope | None:
    """The scope Mem0's entity ids name; None when they name none."""
    if user_id:
        labels = [USERS, user_id, *([AGENTS, agent_id] if agent_id else [])]
    elif agent_id:
        labels = [AGENTS, agent_id]
    elif run_id:
        labels = [RUNS, run_id]
    else:
        return None
    return Scope("/".join(labels), run_id or None)


def entity_namespace(entity_type: str, name: str) -> str:
    """The namespace of one of Mem0's entities ("user", "alice": users/alice)."""
    return f"{ENTITY_ROOTS[entity_type]}/{name}"


def entities_of(namespace: str) -> dict[str, str | None]:
    """The user, agent and run a memory's namespace names (None where it names none), as
    Mem0 answers them. A namespace this door did not write (memories/user-1) names none."""
    labels = namespace.split("/") if namespace else []
    root, name = (labels[0], labels[1]) if len(labels) >= 2 else (None, None)
    user = name if root == USERS else None
    agent = name if root == AGENTS else labels[3] if user and len(labels) >= 4 and labels[2] == AGENTS else None
    return {"user_id": user, "agent_id": agent, "run_id": name if root == RUNS else None}
