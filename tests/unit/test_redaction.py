"""Redaction on its own (no database): what is taken out of text, JSON and identifiers, and
what is left alone. tests/memories/test_personal_data.py and tests/memories/api/test_redaction.py
check that writes apply it end to end."""

from collections import Counter

import pytest

from memories.intake.redaction import IdentifierHoldsSecret, Redactor, passes_luhn, redact_json, redact_text
from tests.memories.secret_corpus import HARMLESS, SECRETS

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


def test_the_corpus_is_large_and_varied():
    kinds = {kind for text, _ in SECRETS for kind in redact_text(text).kinds}
    assert len(SECRETS) >= 30 and len(kinds) >= 15


@pytest.mark.parametrize(("text", "secret"), SECRETS)
def test_no_secret_of_the_corpus_survives_redaction(text, secret):
    result = redact_text(text)
    assert secret not in result.text and result.count >= 1


@pytest.mark.parametrize("text", HARMLESS)
def test_ordinary_text_is_left_alone(text):
    assert redact_text(text).text == text and redact_text(text).count == 0


def test_json_is_redacted_at_any_depth_keys_kept_and_kinds_counted_with_the_texts():
    value = {"notes": ["fine", {"token": "password=hunter2isnotsafe"}], "n": 3}
    redacted, kinds = redact_json(value, Counter({"aws_key": 1}))
    assert redacted == {"notes": ["fine", {"token": "password=[REDACTED:assigned_secret]"}], "n": 3}
    assert kinds == {"aws_key": 1, "assigned_secret": 1}


def test_an_identifier_holding_a_secret_is_refused_naming_the_field():
    with pytest.raises(IdentifierHoldsSecret) as refused:
        Redactor().check_identifier("users/AKIAIOSFODNN7EXAMPLE", field="namespace")
    assert refused.value.field == "namespace" and "AKIAIOSFODNN7EXAMPLE" not in str(refused.value)
    Redactor().check_identifier("users/alice", field="namespace")  # an ordinary one passes
    Redactor(personal=True).check_identifier("users/alice", field="namespace")


def test_personal_data_in_an_identifier_is_refused_only_under_that_policy():
    Redactor().check_identifier("jane.doe@example.com", field="key")
    with pytest.raises(IdentifierHoldsSecret):
        Redactor(personal=True).check_identifier("jane.doe@example.com", field="key")
