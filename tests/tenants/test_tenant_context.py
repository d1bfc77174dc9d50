import pytest
from django.db import ProgrammingError, transaction

from memories import jobs
from memories.errors import NotFound
from memories.models import Memory
from memories.writes import change, create
from memories.writes.kernel import Actor
from tenants import context
from tenants.models import Agent
from tests.markers import committing


def test_tenant_context_sets_and_restores_the_organisation(org_a, org_b):
    assert context.current_org_id() is None
    with context.tenant_context(org_a.id):
        assert context.current_org_id() == org_a.id
        with context.tenant_context(org_b.id):
            assert context.current_org_id() == org_b.id
        assert context.current_org_id() == org_a.id
    assert context.current_org_id() is None


def test_an_exception_inside_the_context_still_restores_the_outer_tenant(org_a, org_b):
    with context.tenant_context(org_a.id):
        with pytest.raises(ZeroDivisionError):
            with context.tenant_context(org_b.id):
                1 / 0
        assert context.current_org_id() == org_a.id


def test_service_account_sees_every_organisation(tenant_a, tenant_b):
    with context.service_account():
        assert set(Agent.objects.values_list("org_id", flat=True)) >= {tenant_a.org.id, tenant_b.org.id}
    assert not Agent.objects.exists()


@committing
def test_the_tenant_cannot_be_set_outside_a_transaction():
    """In autocommit a set_config(..., true) would vanish with its one-statement transaction."""
    with pytest.raises(context.TenantContextError):
        context.activate_org("00000000-0000-0000-0000-000000000001")


# --------------------------------------------------------------------------- one tenant rule
# The boundaries (API authentication, the console, a job, a command, a test) set the tenant;
# services assume it. A service called without one, or with another organisation's id than
# its boundary set, must change nothing.


def _stored_contents(org) -> set[str]:
    with context.tenant_context(org.id):
        return set(Memory.objects.values_list("content", flat=True))


def test_a_write_with_no_tenant_set_changes_nothing(tenant_a):
    before = _stored_contents(tenant_a.org)
    with pytest.raises(ProgrammingError, match="row-level security"), transaction.atomic():
        create.memory_create(org_id=tenant_a.org.id, agent_id=tenant_a.agent.id, content="Written with no tenant")
    assert _stored_contents(tenant_a.org) == before


def test_a_write_naming_another_organisation_than_its_boundary_set_changes_nothing(tenant_a, tenant_b):
    before_a, before_b = _stored_contents(tenant_a.org), _stored_contents(tenant_b.org)
    with context.tenant_context(tenant_a.org.id):
        with pytest.raises(ProgrammingError, match="row-level security"), transaction.atomic():
            create.memory_create(org_id=tenant_b.org.id, agent_id=tenant_b.agent.id, content="Slipped into B")
        with pytest.raises(NotFound), transaction.atomic():
            change.memory_delete(org_id=tenant_b.org.id, memory_id=tenant_b.memory.pk, actor=Actor())
    assert (_stored_contents(tenant_a.org), _stored_contents(tenant_b.org)) == (before_a, before_b)
    with context.tenant_context(tenant_b.org.id):
        tenant_b.memory.refresh_from_db()
    assert tenant_b.memory.deleted_at is None


def test_a_job_runs_as_the_organisation_it_names_and_reaches_no_other(tenant_a, tenant_b):
    with context.tenant_context(tenant_b.org.id):
        Memory.objects.filter(pk=tenant_b.memory.pk).update(embedding=None, embedding_model="", embedding_dimensions=None,
                                                            embedded_at=None)
    # A job for A handed B's memory: it finds nothing to embed, and B's memory stays pending.
    assert jobs.embed_memories(org_id=str(tenant_a.org.id), memory_ids=[str(tenant_b.memory.pk)]) == 0
    assert context.current_org_id() is None  # the job's tenant ended with it
    with context.tenant_context(tenant_b.org.id):
        assert Memory.objects.get(pk=tenant_b.memory.pk).embedding is None
    assert jobs.embed_memories(org_id=str(tenant_b.org.id), memory_ids=[str(tenant_b.memory.pk)]) == 1
