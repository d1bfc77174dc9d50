"""Every field that reads what a client or an operator sends cleans it (memories.intake.cleaning), so no
text reaches a service or a table uncleaned through a field added later: the REST API's and the
LangGraph store's input serializers (MCP's tools validate with them), the console's forms and
Django admin's forms. Checked on the classes, without a server."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest
from django import forms
from django.contrib import admin
from django.contrib.auth.models import AnonymousUser
from django.contrib.postgres.forms import SimpleArrayField
from django.test import RequestFactory
from rest_framework import serializers

import console.forms
from console.forms import CleanCharField as CleanFormField
from integrations.langgraph_store import serializers as langgraph
from integrations.mem0 import serializers as mem0
from memories.admin import ReadOnlyAdmin
from memories.api import serializers as rest
from memories.api.fields import CleanCharField, CleanField, CleanJSONField, NamespaceField
from memories.intake.cleaning import Secrets

ROOT = Path(__file__).resolve().parents[2]
AWS_KEY = "AKIA" + "Q7HLM2RT9VB4NC8K"  # an AWS access key id's shape; made up
DOORS = ("memories/api", "integrations")
SERIALIZER_MODULES = (rest, langgraph, mem0)

# Fields that read no text: numbers, flags, times, ids, one of a fixed set.
NOT_TEXT = (serializers.BooleanField, serializers.IntegerField, serializers.FloatField, serializers.DecimalField,
            serializers.DateTimeField, serializers.DateField, serializers.UUIDField, serializers.ChoiceField,
            rest.ExpandField, langgraph.MinutesField)
NOT_TEXT_IN_FORMS = (forms.BooleanField, forms.IntegerField, forms.DecimalField, forms.DateField, forms.UUIDField,
                     forms.ChoiceField, forms.FileField)


def input_serializers() -> list[type]:
    found = {cls for module in SERIALIZER_MODULES for cls in vars(module).values()
             if isinstance(cls, type) and issubclass(cls, rest.StrictSerializer) and cls is not rest.StrictSerializer}
    return sorted(found, key=lambda cls: f"{cls.__module__}.{cls.__name__}")


def uncleaned(field, path: str) -> list[str]:
    """The places under a serializer field that read text or JSON without cleaning it."""
    if field.read_only:
        return []
    if isinstance(field, serializers.ListSerializer):
        return uncleaned(field.child, f"{path}[]")
    if isinstance(field, serializers.Serializer):
        return [place for name, child in field.fields.items() for place in uncleaned(child, f"{path}.{name}")]
    if isinstance(field, CleanField):
        if isinstance(field, CleanCharField) and field.max_length is None:
            return [f"{path} (no max_length)"]
        return []
    if isinstance(field, serializers.ListField):
        return uncleaned(field.child, f"{path}[]")
    if isinstance(field, NOT_TEXT):
        return []
    return [f"{path} ({type(field).__name__})"]


def test_the_walk_finds_a_field_that_does_not_clean():
    class Careless(rest.StrictSerializer):
        note = serializers.CharField(max_length=10)
        labels = serializers.ListField(child=serializers.CharField())
        extra = serializers.DictField()
        unbounded = CleanCharField(secrets=Secrets.REDACT)
        fine = CleanJSONField(secrets=Secrets.REDACT)

    assert uncleaned(Careless(), "Careless") == [
        "Careless.note (CharField)", "Careless.labels[] (CharField)", "Careless.extra (DictField)",
        "Careless.unbounded (no max_length)"]


@pytest.mark.parametrize("serializer", input_serializers(), ids=lambda cls: cls.__name__)
def test_every_input_serializer_cleans_every_text_it_reads(serializer):
    assert uncleaned(serializer(), serializer.__name__) == []


def serializers_validated_at_the_doors() -> set[str]:
    """The serializer classes the doors' code validates input with (`validated(X, ...)`)."""
    names = set()
    for folder in DOORS:
        for path in (ROOT / folder).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", None)) == \
                        "validated" and node.args:
                    first = node.args[0]
                    names.add(first.attr if isinstance(first, ast.Attribute) else getattr(first, "id", ""))
    return names - {"serializer_class", ""}


def test_whatever_the_doors_validate_with_is_an_input_serializer_walked_above():
    named = serializers_validated_at_the_doors()
    assert {"MemoryCreateSerializer", "SessionCreateSerializer", "PutItemSerializer"} <= named  # the scan works
    walked = {cls.__name__ for cls in input_serializers()}
    assert named - walked == set()


# --------------------------------------------------------------------------- forms


def form_fields_uncleaned(form_class) -> list[str]:
    problems = []
    for name, field in form_class.base_fields.items():
        if isinstance(field, SimpleArrayField):
            field = field.base_field
        if isinstance(field, CleanFormField):
            if field.max_length is None:
                problems.append(f"{name} (no max_length)")
        elif not isinstance(field, NOT_TEXT_IN_FORMS):
            problems.append(f"{name} ({type(field).__name__})")
    return problems


def console_forms() -> list[type]:
    return [cls for cls in vars(console.forms).values()
            if isinstance(cls, type) and issubclass(cls, forms.BaseForm) and cls.__module__ == console.forms.__name__]


def admin_forms() -> dict[str, type]:
    """The add form of every model Django admin may change, as the admin builds it."""
    request = RequestFactory().get("/admin/")
    request.user = AnonymousUser()
    for module in ("memories.admin", "tenants.admin"):  # registered as they are imported
        importlib.import_module(module)
    return {model.__name__: model_admin.get_form(request) for model, model_admin in admin.site._registry.items()
            if model._meta.app_label in ("tenants", "memories") and not isinstance(model_admin, ReadOnlyAdmin)}


def test_the_form_walk_finds_a_field_that_does_not_clean():
    class Careless(forms.Form):
        note = forms.CharField(max_length=10)
        when = forms.DateField()
        unbounded = CleanFormField(secrets=Secrets.REDACT)

    assert form_fields_uncleaned(Careless) == ["note (CharField)", "unbounded (no max_length)"]


@pytest.mark.parametrize("form", console_forms(), ids=lambda cls: cls.__name__)
def test_every_console_form_cleans_every_text_it_reads(form):
    assert form_fields_uncleaned(form) == []


def test_every_admin_form_cleans_every_text_it_reads():
    found = admin_forms()
    assert {"Organization", "Agent", "ApiKey"} <= set(found), found  # the registry was read
    assert {model: problems for model, form in found.items() if (problems := form_fields_uncleaned(form))} == {}


# --------------------------------------------------------------------------- a namespace's two shapes


@pytest.mark.parametrize("sent", [["users", "alice"], "users/alice", "/users/alice/"])
def test_a_namespace_is_read_from_labels_or_them_joined_and_answered_as_labels(sent):
    field = NamespaceField(secrets=Secrets.LOOKUP)
    assert field.run_validation(sent) == "users/alice"
    assert field.to_representation("users/alice") == ["users", "alice"]


@pytest.mark.parametrize(("sent", "message"), [
    ("users//alice", "non-empty"), (["users/alice"], "may not contain '/'"), ([], "at least 1"), ("", "at least 1"),
    ({"users": "alice"}, "at least 1"), ("a" * 257, "longer than 256"), (["users", AWS_KEY], "secret"),
])
def test_a_namespace_of_neither_shape_or_holding_a_secret_is_refused(sent, message):
    with pytest.raises(serializers.ValidationError) as refused:
        NamespaceField(secrets=Secrets.REFUSE).run_validation(sent)
    assert message in str(refused.value.detail) and AWS_KEY not in str(refused.value.detail)


def test_langgraph_s_namespace_stays_a_list_of_labels_without_dots():
    field = langgraph.LabelsField(secrets=Secrets.REFUSE)
    assert field.run_validation(["users", "alice"]) == "users/alice"
    for sent in ("users/alice", ["users.alice"], ["users", f"x.{AWS_KEY}"]):
        with pytest.raises(serializers.ValidationError) as refused:
            field.run_validation(sent)
        assert AWS_KEY not in str(refused.value.detail)
