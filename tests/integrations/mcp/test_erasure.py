"""erase_namespace through the official MCP client, against the served app: an erasure for good, as
POST /erase (the same use case), in two calls. The first counts and erases nothing, answering a
confirmation signed for this API key and namespace; only the second, carrying it, erases, and then
exactly the memories counted (a namespace that changed in between is not erased). A confirmation
serves once, for its key and namespace, within its lifetime; a key erases only what it may write,
and only its agent's memories; another organisation's namespace of the same name is its own."""

from __future__ import annotations

import pytest

from integrations.mcp import confirmation
from memories.models import Erasure, Memory
from tenants.context import tenant_context
from tests import factories
from tests.integrations.mcp.client import data_of, text_of
from tests.integrations.mcp.test_tools import calls
from tests.markers import committing

pytestmark = pytest.mark.slow


@pytest.fixture
def key_a(tenant_a):
    return factories.api_key(agent=tenant_a.agent)[1]


def remember(url: str, key: str, *facts: tuple[str, str]) -> list[str]:
    """(namespace, content) remembered; their ids."""
    return [data_of(result)["memory"]["id"] for result in calls(
        url, key, *[("remember_fact", {"content": content, "namespace": namespace}) for namespace, content in facts])]


def held(org, ids) -> set[str]:
    """Which of the memories are still there, whatever their status."""
    with tenant_context(org.id):
        return {str(memory_id) for memory_id in Memory.objects.filter(org_id=org.id, pk__in=ids).values_list(
            "pk", flat=True)}


def erasures(org) -> int:
    with tenant_context(org.id):
        return Erasure.objects.filter(org_id=org.id).count()


@committing
def test_a_namespace_is_counted_first_and_erased_only_with_the_confirmation(tenant_a, key_a, served):
    erased = remember(served.url, key_a, ("users/carol", "Carol lives in Leeds"),
                      ("users/carol", "Carol's sister is called Jane"), ("users/carol/trips", "Carol went to Oslo"))
    kept = remember(served.url, key_a, ("users/carolyn", "Carolyn plays the cello"), ("users", "Users like tea"))
    other_agent = factories.agent(org=tenant_a.org, name="another agent")
    kept += remember(served.url, factories.api_key(agent=other_agent)[1], ("users/carol", "Carol likes figs"))
    before = erasures(tenant_a.org)

    [counted] = calls(served.url, key_a, ("erase_namespace", {"namespace": ["users", "carol"]}))
    counted = data_of(counted)
    assert counted["erased"] is False and counted["namespace"] == ["users", "carol"]
    assert counted["memories"] == counted["would_erase"]["memories"] == 3  # this agent's, under it
    assert counted["would_erase"]["versions"] >= 3 and counted["expires_in_seconds"] == confirmation.LIFETIME_SECONDS
    assert "3 memories" in counted["next"] and "users/carol" in counted["next"]
    assert held(tenant_a.org, erased + kept) == set(erased + kept) and erasures(tenant_a.org) == before

    done, again = calls(served.url, key_a,
                        ("erase_namespace", {"namespace": "users/carol", "confirmation": counted["confirmation"]}),
                        ("erase_namespace", {"namespace": "users/carol", "confirmation": counted["confirmation"]}))
    done = data_of(done)
    assert done["erased"] is True and done["counts"]["memories"] == 3 and done["erasure_id"]
    assert held(tenant_a.org, erased + kept) == set(kept)
    with tenant_context(tenant_a.org.id):
        recorded = Erasure.objects.get(org_id=tenant_a.org.id, pk=done["erasure_id"])
    assert recorded.scope == {"namespace": "users/carol", "agent": str(tenant_a.agent.pk)}
    assert recorded.counts["memories"] == 3
    # The confirmation served once: what it counted is gone.
    assert again.is_error and "not_found: nothing to erase" in text_of(again), text_of(again)
    assert erasures(tenant_a.org) == before + 1


@committing
def test_a_namespace_that_changed_after_its_count_is_not_erased(tenant_a, key_a, served):
    first = remember(served.url, key_a, ("users/dan", "Dan drives a blue van"), ("users/dan", "Dan is a baker"))
    counted = data_of(calls(served.url, key_a, ("erase_namespace", {"namespace": "users/dan"}))[0])
    assert counted["memories"] == 2
    added = remember(served.url, key_a, ("users/dan/notes", "Dan opens at six"))

    [refused] = calls(served.url, key_a, ("erase_namespace", {"namespace": "users/dan",
                                                              "confirmation": counted["confirmation"]}))
    assert refused.is_error and "scope_changed: " in text_of(refused) and "nothing was erased" in text_of(refused)
    assert held(tenant_a.org, first + added) == set(first + added)

    recounted, done = calls(served.url, key_a, ("erase_namespace", {"namespace": "users/dan"}),
                            ("erase_namespace", {"namespace": "users/dan", "confirmation": "later"}))
    assert data_of(recounted)["memories"] == 3 and done.is_error  # the second call needs the new confirmation
    done = data_of(calls(served.url, key_a, ("erase_namespace", {
        "namespace": "users/dan", "confirmation": data_of(recounted)["confirmation"]}))[0])
    assert done["counts"]["memories"] == 3 and held(tenant_a.org, first + added) == set()


@committing
def test_a_confirmation_serves_only_its_key_and_namespace_within_its_lifetime(tenant_a, key_a, served,
                                                                               monkeypatch):
    ids = remember(served.url, key_a, ("users/erin", "Erin keeps bees"), ("users/erin/garden", "Erin grows leeks"))
    token = data_of(calls(served.url, key_a, ("erase_namespace", {"namespace": ["users", "erin"]}))[0])["confirmation"]
    same_agent_other_key = factories.api_key(agent=tenant_a.agent)[1]

    results = calls(served.url, key_a,
                    ("erase_namespace", {"namespace": "users/erin/garden", "confirmation": token}),
                    ("erase_namespace", {"namespace": "users", "confirmation": token}),
                    ("erase_namespace", {"namespace": "users/erin", "confirmation": token[:-2] + "xx"}),
                    ("erase_namespace", {"namespace": "users/erin", "confirmation": "x" * 10_000}))
    results += calls(served.url, same_agent_other_key,
                     ("erase_namespace", {"namespace": "users/erin", "confirmation": token}))
    for result in results:
        assert result.is_error and "invalid: confirmation: " in text_of(result), text_of(result)
        assert "not given to this API key for this namespace" in text_of(result) or "not one that" in text_of(result)
    monkeypatch.setattr(confirmation, "LIFETIME_SECONDS", -1)  # the served app runs in this process
    [expired] = calls(served.url, key_a, ("erase_namespace", {"namespace": "users/erin", "confirmation": token}))
    assert expired.is_error and "invalid: confirmation: older than" in text_of(expired)
    assert held(tenant_a.org, ids) == set(ids)

    monkeypatch.undo()
    done = data_of(calls(served.url, key_a, ("erase_namespace", {"namespace": "users/erin", "confirmation": token}))[0])
    assert done["counts"]["memories"] == 2 and held(tenant_a.org, ids) == set()


@committing
def test_a_key_erases_only_what_it_may_write_and_an_organisation_only_its_own(tenant_a, tenant_b, key_a, served):
    alice, bob = (remember(served.url, key_a, (f"users/{name}", f"{name.title()} was here"))[0]
                  for name in ("alice", "bob"))
    theirs = factories.api_key(agent=tenant_b.agent)[1]
    b_memory = remember(served.url, theirs, ("users/alice", "Beta's Alice was here"))[0]

    reader = factories.api_key(agent=tenant_a.agent, read_only=True)[1]
    bobs = factories.api_key(agent=tenant_a.agent, namespaces=["users/bob"])[1]
    [read_only] = calls(served.url, reader, ("erase_namespace", {"namespace": "users/alice"}))
    assert read_only.is_error and text_of(read_only).endswith("out_of_reach: this API key is read-only")
    into_alice, above_bob, own = calls(served.url, bobs, ("erase_namespace", {"namespace": "users/alice"}),
                                       ("erase_namespace", {"namespace": "users"}),
                                       ("erase_namespace", {"namespace": "users/bob"}))
    for refused in (into_alice, above_bob):
        assert refused.is_error and "out_of_reach: namespace: this API key may only write under users/bob" in text_of(
            refused)
    assert data_of(own)["memories"] == 1

    # B's key erases B's users/alice: its own memory, never A's.
    counted = data_of(calls(served.url, theirs, ("erase_namespace", {"namespace": "users/alice"}))[0])
    assert counted["memories"] == 1
    [nothing_of_a] = calls(served.url, theirs, ("erase_namespace", {"namespace": "users/bob"}))
    assert nothing_of_a.is_error and "not_found: nothing to erase" in text_of(nothing_of_a)
    # A confirmation is no use to another organisation's key, nor B's to A's.
    [crossed] = calls(served.url, key_a, ("erase_namespace", {"namespace": "users/alice",
                                                              "confirmation": counted["confirmation"]}))
    assert crossed.is_error and "invalid: confirmation: " in text_of(crossed)
    done = data_of(calls(served.url, theirs, ("erase_namespace", {"namespace": "users/alice",
                                                                  "confirmation": counted["confirmation"]}))[0])
    assert done["counts"]["memories"] == 1
    assert held(tenant_a.org, [alice, bob]) == {alice, bob} and held(tenant_b.org, [b_memory]) == set()


@committing
def test_bad_erasure_calls_are_named_and_erase_nothing(tenant_a, key_a, served):
    ids = remember(served.url, key_a, ("users/fay", "Fay collects stamps"))
    results = calls(served.url, key_a,
                    ("erase_namespace", {}),
                    ("erase_namespace", {"namespace": []}),
                    ("erase_namespace", {"namespace": "users//fay"}),
                    ("erase_namespace", {"namespace": ["users/fay"]}),
                    ("erase_namespace", {"namespace": "users/nobody"}),
                    ("erase_namespace", {"namespace": "users/fay", "confirmation": ""}))
    for result, named in zip(results, ["namespace", "namespace", "namespace", "namespace",
                                       "not_found: nothing to erase in namespace users/nobody", "confirmation"],
                             strict=True):
        assert result.is_error and named in text_of(result), (named, text_of(result))
    assert held(tenant_a.org, ids) == set(ids)
