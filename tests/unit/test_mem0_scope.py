"""Where Mem0's entity ids point (integrations.mem0.scope) and how its filters are read
(integrations.mem0.serializers.FiltersField), without a server."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from rest_framework import serializers

from integrations.mem0.scope import Scope, entities_of, entity_namespace, scope_of
from integrations.mem0.serializers import FiltersField, kept


@pytest.mark.parametrize(("ids", "scope"), [
    ({"user_id": "alice"}, Scope("users/alice")),
    ({"user_id": "alice", "agent_id": "planner"}, Scope("users/alice/agents/planner")),
    ({"user_id": "alice", "run_id": "trip-1"}, Scope("users/alice", "trip-1")),
    ({"user_id": "alice", "agent_id": "planner", "run_id": "trip-1"}, Scope("users/alice/agents/planner", "trip-1")),
    ({"agent_id": "planner"}, Scope("agents/planner")),
    ({"agent_id": "planner", "run_id": "r-9"}, Scope("agents/planner", "r-9")),
    ({"run_id": "r-9"}, Scope("runs/r-9", "r-9")),
    ({}, None),
])
def test_entity_ids_name_one_namespace_whose_first_label_is_the_user_when_there_is_one(ids, scope):
    assert scope_of(**ids) == scope


@pytest.mark.parametrize(("namespace", "entities"), [
    ("users/alice", ("alice", None, None)),
    ("users/alice/agents/planner", ("alice", "planner", None)),
    ("users/alice/work", ("alice", None, None)),
    ("agents/planner", (None, "planner", None)),
    ("runs/r-9", (None, None, "r-9")),
    ("memories/user-1", (None, None, None)),
    ("", (None, None, None)),
])
def test_a_namespace_answers_the_user_agent_and_run_it_names(namespace, entities):
    assert tuple(entities_of(namespace).values()) == entities
    assert list(entities_of(namespace)) == ["user_id", "agent_id", "run_id"]


def test_an_entity_s_namespace_is_the_root_its_type_names():
    assert [entity_namespace(kind, "x") for kind in ("user", "agent", "run")] == ["users/x", "agents/x", "runs/x"]


def read(filters, **kwargs):
    field = FiltersField(**kwargs)
    field.bind("filters", None)
    return field.run_validation(filters)


MAY_1 = datetime(2024, 5, 1, tzinfo=UTC)


@pytest.mark.parametrize(("filters", "read_as"), [
    ({"user_id": "alice"}, {"user_id": "alice"}),
    ({"user_id": {"eq": "alice"}, "run_id": "r"}, {"user_id": "alice", "run_id": "r"}),
    ({"AND": [{"user_id": "alice"}, {"agent_id": "planner"}]}, {"user_id": "alice", "agent_id": "planner"}),
    ({"AND": [{"user_id": "alice"}], "user_id": "alice"}, {"user_id": "alice"}),
    ({"created_at": {"gte": "2024-05-01"}}, {"created_after": MAY_1}),
    ({"created_at": {"gt": "2024-05-01"}}, {"created_after": MAY_1 + timedelta(days=1)}),
    ({"created_at": {"lte": "2024-05-01"}}, {"created_before": MAY_1 + timedelta(days=1)}),
    ({"created_at": {"lt": "2024-05-01T00:00:00Z"}}, {"created_before": MAY_1}),
    ({"created_at": {"lte": "2024-05-01T00:00:00"}}, {"created_before": MAY_1 + timedelta(microseconds=1)}),
    ({"created_at": {"eq": "2024-05-01"}}, {"created_after": MAY_1, "created_before": MAY_1 + timedelta(days=1)}),
    ({"AND": [{"created_at": {"gte": "2024-04-01"}}, {"created_at": {"gte": "2024-05-01", "lt": "2024-06-01"}}]},
     {"created_after": MAY_1, "created_before": datetime(2024, 6, 1, tzinfo=UTC)}),
])
def test_filters_are_read_as_entity_ids_and_created_at_bounds(filters, read_as):
    assert read(filters) == read_as


@pytest.mark.parametrize(("filters", "where"), [
    ({"OR": [{"user_id": "a"}]}, "OR"), ({"NOT": {"user_id": "a"}}, "NOT"), ({"app_id": "shop"}, "app_id"),
    ({"user_id": "*"}, "user_id"), ({"user_id": {"in": ["a", "b"]}}, "user_id"), ({"metadata": {"k": 1}}, "metadata"),
    ({"AND": [{"user_id": "a"}, {"user_id": "b"}]}, "AND[1].user_id"), ({"AND": "x"}, "AND"),
    ({"created_at": "2024-05-01"}, "created_at"), ({"created_at": {"after": "2024-05-01"}}, "created_at"),
])
def test_what_is_not_honoured_is_refused_naming_where(filters, where):
    with pytest.raises(serializers.ValidationError) as refused:
        read(filters)
    assert where in refused.value.detail, refused.value.detail


def test_created_at_is_no_filter_where_dates_are_not_taken():
    with pytest.raises(serializers.ValidationError) as refused:
        read({"user_id": "a", "created_at": {"gte": "2024-05-01"}}, dates=False)
    assert "created_at" in refused.value.detail


@pytest.mark.parametrize(("infer", "roles"), [(True, ["user", "user"]), (False, ["user", "assistant", "user"])])
def test_infer_keeps_the_user_s_messages_and_without_it_the_assistant_s_too(infer, roles):
    messages = [{"role": role, "content": role} for role in ("system", "user", "assistant", "user")]
    assert [message["role"] for message in kept(messages, infer=infer)] == roles
