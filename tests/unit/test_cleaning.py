"""Cleaning a value on its own (no database): what each field's choice does with a secret, and
what is refused whatever the choice, named where it is. tests/unit/test_cleaning_fields.py
checks that every field uses it; tests/test_secret_markers.py, that every door does."""

import pytest

from memories.errors import InvalidInput
from memories.intake.cleaning import MAX_JSON_DEPTH, Secrets, Unclean, clean_json, clean_text

TOKEN = "AKIA" + "IOSFODNN7EXAMPLE"  # an AWS access key id's shape, AWS's documented example


def refused(call, **arguments) -> Unclean:
    with pytest.raises(Unclean) as raised:
        call(**arguments)
    assert isinstance(raised.value, InvalidInput)  # the services' refusal: a 400 at every door
    return raised.value


def test_free_text_has_its_secrets_redacted_and_the_rest_kept():
    assert clean_text(f"rotate {TOKEN} today", field="reason", secrets=Secrets.REDACT) == \
        "rotate [REDACTED:aws_key] today"
    assert clean_text("tea, not coffee", field="reason", secrets=Secrets.REDACT) == "tea, not coffee"


def test_an_identifier_holding_a_secret_is_refused_naming_the_field_not_the_secret():
    problem = refused(clean_text, value=f"thread-{TOKEN}", field="external_id", secrets=Secrets.REFUSE)
    assert problem.field == "external_id" and "secret" in problem.message and TOKEN not in problem.message
    assert clean_text("thread-81", field="external_id", secrets=Secrets.REFUSE) == "thread-81"


@pytest.mark.parametrize("secrets", [Secrets.RECORDED, Secrets.LOOKUP])
def test_text_left_to_the_write_or_only_compared_keeps_its_secret(secrets):
    # The write that stores it redacts it and records that it did (a memory's provenance).
    assert clean_text(f"token {TOKEN}", field="content", secrets=secrets) == f"token {TOKEN}"


@pytest.mark.parametrize("secrets", list(Secrets))
@pytest.mark.parametrize("bad", ["a\x00b", "a\ud800b"], ids=["nul", "unpaired-surrogate"])
def test_text_postgres_cannot_store_is_refused_whatever_becomes_of_secrets(secrets, bad):
    problem = refused(clean_text, value=bad, field="name", secrets=secrets)
    assert problem.field == "name" and ("NUL" in problem.message or "surrogate" in problem.message)


def test_a_redacted_text_must_still_fit():
    # A short secret's placeholder is longer than the secret.
    text = "password=hunter22"
    assert len(text) <= 20 < len(clean_text(text, field="name", secrets=Secrets.REDACT))
    problem = refused(clean_text, value=text, field="name", secrets=Secrets.REDACT, max_length=20)
    assert problem.field == "name" and "20 characters once its secrets are redacted" in problem.message


def test_json_has_its_secrets_redacted_in_keys_and_values():
    cleaned = clean_json({"note": f"token {TOKEN}", TOKEN: [1, {"deep": TOKEN}]}, field="metadata",
                         secrets=Secrets.REDACT)
    assert cleaned == {"note": "token [REDACTED:aws_key]",
                       "[REDACTED:aws_key]": [1, {"deep": "[REDACTED:aws_key]"}]}
    kept = {"note": TOKEN}
    assert clean_json(kept, field="metadata", secrets=Secrets.RECORDED) == kept


def test_json_problems_are_named_where_they_are():
    assert refused(clean_json, value={"a": {"b": "x\x00"}}, field="metadata", secrets=Secrets.REDACT).field == \
        "metadata.a.b"
    assert refused(clean_json, value={"a": ["ok", "\ud800"]}, field="metadata", secrets=Secrets.LOOKUP).field == \
        "metadata.a[1]"
    deep = inner = {}
    for _ in range(MAX_JSON_DEPTH + 1):
        inner["x"] = {}
        inner = inner["x"]
    problem = refused(clean_json, value=deep, field="metadata", secrets=Secrets.RECORDED)
    assert problem.field == "metadata.x" and "nested deeper" in problem.message


def test_json_must_fit_its_bytes():
    problem = refused(clean_json, value={"text": "é" * 60}, field="value", secrets=Secrets.RECORDED, max_bytes=100)
    assert problem.field == "value" and "100 bytes" in problem.message
    assert clean_json({"text": "é" * 40}, field="value", secrets=Secrets.RECORDED, max_bytes=100)


def test_json_is_never_an_identifier():
    with pytest.raises(ValueError):
        clean_json({}, field="metadata", secrets=Secrets.REFUSE)
