"""An organisation may opt into redacting personal data: e-mail addresses, payment card
numbers (Luhn-checked) and phone numbers, on top of the secrets every organisation's writes
lose."""

import pytest

from memories.models import RetrievalEvent
from memories.redaction import passes_luhn, redact_text
from tenants.context import tenant_context
from tenants.models import Organization

PERSONAL = [
    ("Write to jane.doe+memo@example.co.uk tomorrow", "email"),
    ("Card 4111 1111 1111 1111 expires soon", "card_number"),
    ("Card 5500-0000-0000-0004 on file", "card_number"),
    ("Call +44 20 7946 0958 after six", "phone_number"),
    ("Call +1-415-555-0132", "phone_number"),
    ("Office line (415) 555-0132", "phone_number"),
]
ORDINARY = [
    "The meeting moved to 2023-05-12 at 14:30",
    "Order 1234567890123 shipped",  # 13 digits that fail the Luhn check
    "Revenue grew 12.5% to 4,200,000 in 2024",
    "Version 3.11.7 of Python, build 20240101",
    "Room 101, floor 3, badge 5521",
]


@pytest.mark.parametrize(("text", "kind"), PERSONAL)
def test_personal_data_is_redacted_when_the_policy_asks(text, kind):
    result = redact_text(text, personal=True)
    assert result.kinds == {kind: 1}, result.text
    assert f"[REDACTED:{kind}]" in result.text
    assert redact_text(text).text == text  # the default policy keeps it


@pytest.mark.parametrize("text", ORDINARY)
def test_numbers_that_are_not_personal_data_stay(text):
    assert redact_text(text, personal=True).text == text


def test_luhn():
    assert passes_luhn("4111111111111111") and passes_luhn("79927398713")
    assert not passes_luhn("4111111111111112") and not passes_luhn("1234567890123")


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
