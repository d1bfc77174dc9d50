"""A reference that outlives its row (memory_platform.references): every deletion empties it
first, and the row that referred stays; the database refuses a deletion that did not; and no
foreign key carrying org_id is SET NULL or SET DEFAULT, which a Citus cluster distributed by
org_id refuses."""

from dataclasses import dataclass
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.db import IntegrityError, connection, connections, transaction
from django.db.models.functions import Now

from memories.lifecycle import erasure, expiry
from memories.lifecycle.erasure import ErasureScope
from memories.models import Erasure, Memory, MemoryVersion, RetrievalEvent
from memory_platform.references import CASCADED, CLEARED, Reference
from tenants.context import service_account, tenant_context
from tenants.models import Agent, Organization, Session
from tests import factories

pytestmark = pytest.mark.django_db


@dataclass
class AgentWork:
    """What an agent left in its organisation that outlives it, and what goes with it."""

    org: Organization
    agent: Agent  # the one deleted
    other: Agent  # stays
    session: Session  # the agent's, holding the other agent's memory
    in_session: Memory
    version: MemoryVersion  # of the other agent's memory, changed by the agent
    event: RetrievalEvent
    erasure: Erasure
    own: Memory  # the agent's: goes with it
    superseded: Memory  # the other agent's, superseded by the agent's
    merged: Memory  # the other agent's, merged into the agent's


def agent_work(org: Organization) -> AgentWork:
    agent = factories.agent(org=org, name="leaving")
    other = factories.agent(org=org, name="staying")
    with tenant_context(org.id):
        session = Session.objects.create(org=org, agent=agent, namespace="users/alice")
    in_session = factories.memory(org=org, agent=other, session=session, content="Alice takes the early train")
    own = factories.memory(org=org, agent=agent, content="Alice moved to Porto")
    superseded = factories.memory(org=org, agent=other, content="Alice lives in Lisbon",
                                  status=Memory.Status.SUPERSEDED, superseded_by=own)
    merged = factories.memory(org=org, agent=other, content="Alice lives in Portugal's north",
                              status=Memory.Status.MERGED, merged_into=own)
    with tenant_context(org.id):
        version = MemoryVersion.objects.create(
            org=org, memory=in_session, version_num=2, operation="update", content=in_session.content,
            category=in_session.category, confidence=in_session.confidence, status=in_session.status,
            changed_by_type="agent", changed_by_agent=agent)
        event = RetrievalEvent.objects.create(org=org, kind="search", agent=agent, query="where does Alice live?")
        erased = Erasure.objects.create(org=org, scope={"namespace": "users/bob"}, counts={"memories": 1},
                                        requested_by_agent=agent, via="api")
    return AgentWork(org=org, agent=agent, other=other, session=session, in_session=in_session, version=version,
                     event=event, erasure=erased, own=own, superseded=superseded, merged=merged)


def assert_outlived(work: AgentWork) -> None:
    """The agent and its own memory are gone; everything else stays, its reference empty."""
    with service_account():
        assert not Agent.objects.filter(pk=work.agent.pk).exists()
        assert not Memory.objects.filter(pk=work.own.pk).exists()
        assert Agent.objects.filter(pk=work.other.pk).exists()
        assert Session.objects.get(pk=work.session.pk).agent_id is None
        assert Memory.objects.get(pk=work.in_session.pk).session_id == work.session.pk
        assert MemoryVersion.objects.get(pk=work.version.pk).changed_by_agent_id is None
        assert RetrievalEvent.objects.get(pk=work.event.pk).agent_id is None
        assert Erasure.objects.get(pk=work.erasure.pk).requested_by_agent_id is None
        superseded = Memory.objects.get(pk=work.superseded.pk)
        assert (superseded.superseded_by_id, superseded.status) == (None, Memory.Status.SUPERSEDED)
        merged = Memory.objects.get(pk=work.merged.pk)
        assert (merged.merged_into_id, merged.status) == (None, Memory.Status.MERGED)


@pytest.fixture
def admin_client_logged_in(client):
    user = get_user_model().objects.create_superuser("references-admin", "admin@example.com", "a-long-password")
    client.force_login(user)
    return client


# Every way an agent is deleted: Django admin's page and its bulk action (as the service
# account, across organisations), and the ORM's instance and queryset (a command, a shell).
def delete_in_admin(client, work):
    response = client.post(f"/admin/tenants/agent/{work.agent.pk}/delete/", {"post": "yes"})
    assert response.status_code == 302, response.content


def delete_in_admin_bulk(client, work):
    response = client.post("/admin/tenants/agent/", {"action": "delete_selected", "post": "yes",
                                                     "_selected_action": [str(work.agent.pk)]})
    assert response.status_code == 302, response.content


def delete_instance(client, work):
    with tenant_context(work.org.id):
        Agent.objects.get(pk=work.agent.pk).delete()


def delete_queryset(client, work):
    with tenant_context(work.org.id):
        assert Agent.objects.filter(org_id=work.org.id, name="leaving").delete()[0] == 1


@pytest.mark.parametrize("delete", [delete_in_admin, delete_in_admin_bulk, delete_instance, delete_queryset],
                         ids=lambda delete: delete.__name__)
def test_deleting_an_agent_keeps_what_it_left_with_the_reference_emptied(admin_client_logged_in, tenant_a, tenant_b,
                                                                          delete):
    work = agent_work(tenant_a.org)
    delete(admin_client_logged_in, work)
    assert_outlived(work)
    with tenant_context(tenant_b.org.id):  # another organisation's rows never move
        assert Session.objects.get(pk=tenant_b.session.pk).agent_id == tenant_b.agent.pk
        assert RetrievalEvent.objects.get(pk=tenant_b.retrieval_event.pk).agent_id == tenant_b.agent.pk


def test_deleting_agents_of_two_organisations_at_once_empties_each_ones_references(tenant_a, tenant_b):
    works = [agent_work(tenant_a.org), agent_work(tenant_b.org)]
    with service_account():
        assert Agent.objects.filter(name="leaving").delete()[1]["tenants.Agent"] == 2
    for work in works:
        assert_outlived(work)


def test_an_agents_deletion_that_fails_changes_nothing(tenant_a):
    """The references are emptied in the deletion's transaction: undone with it."""
    work = agent_work(tenant_a.org)
    with tenant_context(tenant_a.org.id):
        with pytest.raises(IntegrityError), transaction.atomic():
            Agent.objects.get(pk=work.agent.pk).delete()
            Agent.objects.create(org=tenant_a.org, name="staying")  # the name is taken: the whole change fails
        assert Session.objects.get(pk=work.session.pk).agent_id == work.agent.pk
        assert Memory.objects.get(pk=work.superseded.pk).superseded_by_id == work.own.pk


def test_deleting_an_organisation_deletes_every_row_that_referred_inside_it(admin_client_logged_in, tenant_a,
                                                                            tenant_b):
    """Its rows go in the one statement's cascades: a reference among them, NO ACTION, holds
    nothing back."""
    work = agent_work(tenant_a.org)
    replay = factories_replay(tenant_a)
    response = admin_client_logged_in.post(f"/admin/tenants/organization/{tenant_a.org.pk}/delete/", {"post": "yes"})
    assert response.status_code == 302, response.content
    with service_account():
        assert not Organization.objects.filter(pk=tenant_a.org.pk).exists()
        for model, pk in ((Agent, work.agent.pk), (Session, work.session.pk), (Memory, work.superseded.pk),
                          (MemoryVersion, work.version.pk), (RetrievalEvent, replay.pk), (Erasure, work.erasure.pk)):
            assert not model.objects.filter(pk=pk).exists(), model
        assert Session.objects.filter(pk=tenant_b.session.pk).exists()
    with service_account():
        tenant_b.org.delete()  # by the ORM too
        assert not Memory.objects.filter(org_id=tenant_b.org.pk).exists()


def factories_replay(tenant, *, of: RetrievalEvent | None = None) -> RetrievalEvent:
    """A replay of the tenant's retrieval event (or `of`), which returned nothing itself."""
    with tenant_context(tenant.org.id):
        return RetrievalEvent.objects.create(org=tenant.org, kind="replay", agent=tenant.agent, query="again",
                                             replay_of=of or tenant.retrieval_event)


# Memories, sessions and retrieval events go by erasure (the API's, the console's job, the
# command's, the expiry sweep's: all memories.lifecycle.erasure) and by the ORM.

def superseded_pair(tenant, *, namespace_of_new: str) -> tuple[Memory, Memory, Memory]:
    """An old memory kept under memories/user-1, superseded by a new one and merged into it
    by another, the new one under `namespace_of_new`."""
    new = factories.memory(org=tenant.org, agent=tenant.agent, namespace=namespace_of_new, content="Bob drinks tea")
    old = factories.memory(org=tenant.org, agent=tenant.agent, namespace="memories/user-1", content="Bob drinks coffee",
                           status=Memory.Status.SUPERSEDED, superseded_by=new)
    merged = factories.memory(org=tenant.org, agent=tenant.agent, namespace="memories/user-1",
                              content="Bob drinks hot drinks", status=Memory.Status.MERGED, merged_into=new)
    return new, old, merged


def test_erasing_a_memory_others_were_superseded_by_or_merged_into_empties_their_reference(tenant_a):
    new, old, merged = superseded_pair(tenant_a, namespace_of_new="users/bob")
    with tenant_context(tenant_a.org.id):
        outcome = erasure.erase(tenant_a.org.id, ErasureScope(namespace="users/bob"), via="api")
        assert outcome.counts["memories"] == 1
        assert not Memory.objects.filter(pk=new.pk).exists()
        assert Memory.objects.get(pk=old.pk).superseded_by_id is None
        assert Memory.objects.get(pk=merged.pk).merged_into_id is None


def test_erasing_through_the_api_empties_the_references_to_what_it_erased(tenant_a, api_a):
    new, old, merged = superseded_pair(tenant_a, namespace_of_new="users/bob")
    response = api_a.post("/api/v1/erase", {"namespace": "users/bob"}, format="json")
    assert response.status_code == 200, response.content
    with tenant_context(tenant_a.org.id):
        assert Memory.objects.get(pk=old.pk).superseded_by_id is None
        assert Memory.objects.get(pk=merged.pk).merged_into_id is None


def test_a_memory_erased_in_a_later_batch_than_the_one_it_points_at_goes_too(tenant_a, monkeypatch):
    """The erasure deletes in batches (by key): the old memory, erased with the new one that
    superseded it, may still point at it when the new one's batch goes."""
    monkeypatch.setattr(erasure, "BATCH", 1)
    new = factories.memory(org=tenant_a.org, agent=tenant_a.agent, namespace="users/bob", content="Bob drinks tea")
    old = factories.memory(org=tenant_a.org, agent=tenant_a.agent, namespace="users/bob", content="Bob drinks coffee",
                           status=Memory.Status.SUPERSEDED, superseded_by=new)
    with tenant_context(tenant_a.org.id):
        assert erasure.erase(tenant_a.org.id, ErasureScope(namespace="users/bob"), via="api").counts["memories"] == 2
        assert not Memory.objects.filter(pk__in=[new.pk, old.pk]).exists()


def test_the_expiry_sweep_empties_the_references_to_an_expired_memory(tenant_a):
    new, old, merged = superseded_pair(tenant_a, namespace_of_new="users/bob")
    with tenant_context(tenant_a.org.id):
        Memory.objects.filter(pk=new.pk).update(expires_at=Now() - timedelta(hours=1))
    assert expiry.expire() == 1
    with tenant_context(tenant_a.org.id):
        assert not Memory.objects.filter(pk=new.pk).exists()
        assert Memory.objects.get(pk=old.pk).superseded_by_id is None


def test_erasing_a_session_keeps_its_memories_out_of_the_scope_without_it(tenant_a):
    """A session kept under users/bob holds a memory of another namespace: the erasure of
    users/bob takes the session, and the memory stays, in no session."""
    with tenant_context(tenant_a.org.id):
        session = Session.objects.create(org=tenant_a.org, agent=tenant_a.agent, namespace="users/bob")
    erased = factories.memory(org=tenant_a.org, agent=tenant_a.agent, namespace="users/bob", session=session,
                              content="Bob's flight lands at nine")
    elsewhere = factories.memory(org=tenant_a.org, agent=tenant_a.agent, namespace="teams/ops", session=session,
                                 content="The ops team books the taxi")
    with tenant_context(tenant_a.org.id):
        counts = erasure.erase(tenant_a.org.id, ErasureScope(namespace="users/bob"), via="api").counts
        assert (counts["memories"], counts["sessions"]) == (1, 1)
        assert not Memory.objects.filter(pk=erased.pk).exists()
        assert Memory.objects.get(pk=elsewhere.pk).session_id is None


def test_erasing_an_event_that_was_replayed_keeps_the_replay_without_it(tenant_a):
    shown = factories.memory(org=tenant_a.org, agent=tenant_a.agent, namespace="users/bob", content="Bob reads Saramago")
    with tenant_context(tenant_a.org.id):
        asked = RetrievalEvent.objects.create(org=tenant_a.org, kind="search", agent=tenant_a.agent,
                                              query="what does Bob read?", returned_memory_ids=[shown.pk],
                                              returned_scores=[0.8])
    replay = factories_replay(tenant_a, of=asked)
    with tenant_context(tenant_a.org.id):
        counts = erasure.erase(tenant_a.org.id, ErasureScope(namespace="users/bob"), via="api").counts
        assert counts["retrieval_events"] == 1 and not RetrievalEvent.objects.filter(pk=asked.pk).exists()
        assert RetrievalEvent.objects.get(pk=replay.pk).replay_of_id is None


def test_the_orm_deletes_memories_sessions_and_events_after_emptying_the_references(tenant_a):
    new, old, merged = superseded_pair(tenant_a, namespace_of_new="users/bob")
    replay = factories_replay(tenant_a)
    with tenant_context(tenant_a.org.id):
        Memory.objects.get(pk=new.pk).delete()
        assert (Memory.objects.get(pk=old.pk).superseded_by_id, Memory.objects.get(pk=merged.pk).merged_into_id) == (
            None, None)
        assert Session.objects.filter(pk=tenant_a.session.pk).delete()[0] == 1
        assert Memory.objects.get(pk=tenant_a.memory.pk).session_id is None
        assert RetrievalEvent.objects.filter(pk=tenant_a.retrieval_event.pk).delete()[0] >= 1
        assert RetrievalEvent.objects.get(pk=replay.pk).replay_of_id is None


# The database itself refuses a reference to a row that is gone.

def raw_delete(table: str, pk) -> None:
    with connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM {table} WHERE id = %s", [pk])


@pytest.mark.parametrize("parent, child, column", [
    (parent, reference.table, reference.column) for parent, references in CLEARED.items() for reference in references],
    ids=lambda value: value if isinstance(value, str) else None)
def test_the_database_refuses_to_delete_a_row_still_referred_to(tenant_a, parent, child, column):
    work = agent_work(tenant_a.org)
    replay = factories_replay(tenant_a)
    parents = {"agents": work.agent.pk, "sessions": work.session.pk, "retrieval_events": tenant_a.retrieval_event.pk,
               "memories": work.own.pk}
    referring = {("sessions", "agent_id"): work.session.pk, ("memory_versions", "changed_by_agent_id"): work.version.pk,
                 ("retrieval_events", "agent_id"): work.event.pk, ("erasures", "requested_by_agent_id"): work.erasure.pk,
                 ("memories", "session_id"): work.in_session.pk, ("memories", "superseded_by"): work.superseded.pk,
                 ("memories", "merged_into"): work.merged.pk, ("retrieval_events", "replay_of"): replay.pk}
    with tenant_context(tenant_a.org.id), connection.cursor() as cursor:
        # Only this one reference is left: every other is emptied.
        for (table, other_column), pk in referring.items():
            if (table, other_column) != (child, column):
                cursor.execute(f"UPDATE {table} SET {other_column} = NULL WHERE id = %s", [pk])
        with pytest.raises(IntegrityError, match=f"{child}_{column}_fkey"), transaction.atomic():
            raw_delete(parent, parents[parent])
        cursor.execute(f"SELECT {column} FROM {child} WHERE id = %s", [referring[(child, column)]])
        assert cursor.fetchone()[0] == parents[parent]


# The catalog: Citus can distribute every table by org_id.

FOREIGN_KEYS = """
    SELECT c.conname, c.conrelid::regclass::text, c.confrelid::regclass::text, c.confdeltype,
           array(SELECT a.attname::text FROM unnest(c.conkey) WITH ORDINALITY k(attnum, n)
                 JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.attnum ORDER BY k.n)
    FROM pg_constraint c WHERE c.contype = 'f' AND c.connamespace = 'public'::regnamespace
"""


def foreign_keys() -> list[tuple[str, str, str, str, list[str]]]:
    with connections["owner"].cursor() as cursor:
        cursor.execute(FOREIGN_KEYS)
        return cursor.fetchall()


@pytest.mark.django_db(databases=["default", "owner"])
def test_no_foreign_key_with_org_id_sets_null_or_default():
    keys = foreign_keys()
    assert any("org_id" in columns for *_, columns in keys)
    refused = [name for name, _, _, on_delete, columns in keys if on_delete in ("n", "d") and "org_id" in columns]
    assert refused == []


@pytest.mark.django_db(databases=["default", "owner"])
def test_the_references_a_deletion_empties_are_the_schemas_no_action_keys():
    """memory_platform.references names every NO ACTION tenant reference (each deletion path
    relies on it), and, for each parent, the parents its deletion cascades to."""
    keys = foreign_keys()
    no_action = {(parent, Reference(table, columns[1])) for _, table, parent, on_delete, columns in keys
                 if on_delete == "a" and columns[:1] == ["org_id"] and len(columns) == 2}
    assert no_action == {(parent, reference) for parent, references in CLEARED.items() for reference in references}
    # A row with references of its own to empty that goes by cascade, other than with its
    # organisation (whose deletion takes every row that could refer to it).
    cascades = {(parent, Reference(table, columns[1])) for _, table, parent, on_delete, columns in keys
                if on_delete == "c" and columns[:1] == ["org_id"] and len(columns) == 2 and table in CLEARED}
    assert cascades == {(parent, child) for parent, children in CASCADED.items() for child in children}
