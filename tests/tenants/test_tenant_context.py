import pytest

from tenants import context
from tests.markers import committing
from tenants.models import Agent


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
