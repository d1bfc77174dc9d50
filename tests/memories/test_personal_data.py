"""An organisation may opt into redacting personal data: e-mail addresses, payment card
numbers (Luhn-checked) and phone numbers, on top of the secrets every organisation's writes
lose."""

import pytest

from memories.models import RetrievalEvent
from tenants.context import tenant_context
from tenants.models import Organization


@pytest.mark.django_db
def test_an_organisation_that_opts_in_stores_no_personal_data_and_others_keep_it(tenant_a, tenant_b, api_a, api_b):
    with tenant_context(tenant_a.org.id):
        assert Organization.objects.filter(pk=tenant_a.org.pk).update(redact_personal_data=True) == 1
    text = "Reach the user at jane.doe@example.com or +44 20 7946 0958"
    opted_in = api_a.post("/api/v1/memories", {"content": text, "metadata": {"contact": "jane.doe@example.com"}})
    memory = opted_in.json()["memory"]
    assert memory["content"] == "Reach the user at [REDACTED:email] or [REDACTED:phone_number]"
    assert memory["metadata"] == {"contact": "[REDACTED:email]"}
    assert memory["provenance"]["redaction"]["kinds"] == {"email": 2, "phone_number": 1}
    search = api_a.post("/api/v1/search", {"query": "jane.doe@example.com"})
    assert search.status_code == 200
    with tenant_context(tenant_a.org.id):
        assert RetrievalEvent.objects.get(pk=search.json()["retrieval_event_id"]).query == "[REDACTED:email]"
    refused = api_a.post("/api/v1/memories", {"content": "x", "namespace": ["users", "jane.doe@example.com"]})
    assert refused.status_code == 400 and refused.json()["error"]["fields"].keys() == {"namespace"}

    kept = api_b.post("/api/v1/memories", {"content": text}).json()["memory"]
    assert kept["content"] == text


@pytest.mark.django_db
def test_a_search_asked_with_redacted_values_is_not_replayed_as_something_else(tenant_a, api_a):
    with tenant_context(tenant_a.org.id):
        Organization.objects.filter(pk=tenant_a.org.pk).update(redact_personal_data=True)
    asked = api_a.post("/api/v1/search", {"query": "what did jane.doe@example.com order?"}).json()
    replayed = api_a.post(f"/api/v1/retrieval-events/{asked['retrieval_event_id']}/replay")
    assert replayed.status_code == 409 and replayed.json()["error"]["code"] == "redacted"
    plain = api_a.post("/api/v1/search", {"query": "what did the user order?"}).json()
    assert api_a.post(f"/api/v1/retrieval-events/{plain['retrieval_event_id']}/replay").status_code == 201


@pytest.mark.django_db
def test_a_sensitivity_label_holding_personal_data_is_refused(tenant_a, api_a):
    with tenant_context(tenant_a.org.id):
        Organization.objects.filter(pk=tenant_a.org.pk).update(redact_personal_data=True)
    response = api_a.post("/api/v1/memories", {"content": "x", "sensitivity": "jane.doe@example.com"})
    assert response.status_code == 400 and response.json()["error"]["fields"].keys() == {"sensitivity"}


@pytest.mark.django_db
def test_a_search_redacts_by_the_policy_the_organisation_has_when_it_is_asked(tenant_a, api_a):
    # Authentication reads the policy with the key's agent, once a request: a change made
    # between two searches of one key applies to the second, and turning it off again too.
    asked = "what did jane.doe@example.com order?"

    def recorded_query():
        response = api_a.post("/api/v1/search", {"query": asked})
        assert response.status_code == 200
        with tenant_context(tenant_a.org.id):
            return RetrievalEvent.objects.get(pk=response.json()["retrieval_event_id"]).query

    assert recorded_query() == asked
    with tenant_context(tenant_a.org.id):
        Organization.objects.filter(pk=tenant_a.org.pk).update(redact_personal_data=True)
    assert recorded_query() == "what did [REDACTED:email] order?"
    with tenant_context(tenant_a.org.id):
        Organization.objects.filter(pk=tenant_a.org.pk).update(redact_personal_data=False)
    assert recorded_query() == asked
