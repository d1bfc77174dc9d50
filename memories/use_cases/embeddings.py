"""The deployment's embedding model (memories.lifecycle.reembed), as the console shows it to an
organisation's admins and lets the deployment's staff change it.

The model is the deployment's, every organisation's alike: only an operator who is one of the
deployment's staff (a Django admin user) may build another, switch to it or roll back, so that
an organisation's admin cannot change how every other organisation's memories are searched,
nor spend the deployment's worker on it. A build or a switch is queued for the worker.
"""

from __future__ import annotations

from memories.access import Caller
from memories.errors import Conflict, InvalidInput, OutOfReach
from memories.lifecycle import reembed

ACTIONS = ("build", "activate", "rollback")


def standings(caller: Caller) -> list[reembed.Standing]:
    """Every model known here: the active one, those built or being built, each with its progress."""
    return reembed.standings()


def rollback_target(standings: list[reembed.Standing]) -> str:
    """The model a rollback returns to: the one the active model replaced ("" if none)."""
    return next((standing.replaced for standing in standings if standing.active), "")


def may_change(caller: Caller) -> bool:
    return caller.user is not None and caller.user.is_staff


def change(caller: Caller, action: str, model: str = "") -> str:
    """Queue a build of `model` ("build"), a build then the switch to it ("activate"), or the
    switch back to the model the active one replaced ("rollback"); the job's id. Raises
    redis.RedisError when the queue is unreachable (nothing was started)."""
    if action not in ACTIONS:
        raise InvalidInput(f"action must be one of {', '.join(ACTIONS)}", field="action")
    if not may_change(caller):
        raise OutOfReach("only the deployment's staff may change the embedding model: it serves every organisation")
    if action == "rollback":
        model = rollback_target(reembed.standings())
        if not model:
            raise Conflict("nothing to roll back to: no model was active before this one")
    return reembed.reembed_enqueue(model=model, then_activate=action != "build")
