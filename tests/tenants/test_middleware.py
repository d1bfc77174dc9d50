"""The request transaction: the tenant lives exactly as long as the request, and a rejected
request changes nothing."""

from django.http import HttpResponse
from django.test import RequestFactory

from tenants import context
from tenants.middleware import TenantTransactionMiddleware
from tenants.models import Agent
from tests.markers import committing


def through_middleware(view):
    return TenantTransactionMiddleware(view)(RequestFactory().get("/"))


@committing
def test_the_tenant_set_during_a_request_is_gone_when_it_ends(org_a):
    seen = {}

    def view(request):
        context.activate_org(org_a.id)
        seen["during"] = context.current_org_id()
        return HttpResponse("ok")

    through_middleware(view)
    assert seen["during"] == org_a.id
    # Same connection, next statement: the setting ended with the request's transaction.
    assert context.current_org_id() is None
    assert through_middleware(lambda request: HttpResponse(str(context.current_org_id()))).content == b"None"


@committing
def test_a_request_answered_with_an_error_status_changes_nothing(org_a):
    def view(request):
        context.activate_org(org_a.id)
        Agent.objects.create(org=org_a, name="half-made")
        return HttpResponse("bad input", status=400)

    assert through_middleware(view).status_code == 400
    with context.tenant_context(org_a.id):
        assert not Agent.objects.filter(name="half-made").exists()


@committing
def test_a_successful_request_commits(org_a):
    def view(request):
        context.activate_org(org_a.id)
        Agent.objects.create(org=org_a, name="kept")
        return HttpResponse("created", status=201)

    through_middleware(view)
    with context.tenant_context(org_a.id):
        assert Agent.objects.filter(name="kept").exists()
