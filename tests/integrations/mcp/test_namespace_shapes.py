"""MCP's tools take a namespace in either shape the REST API takes, a list of labels or them
joined with "/", for writes and filters alike, and answer with the list (tools.Namespace and
NamespacePrefix over memories.api.fields.NamespaceField)."""

from __future__ import annotations

import pytest

from tests import factories
from tests.integrations.mcp.client import data_of, text_of
from tests.integrations.mcp.test_tools import calls
from tests.markers import committing

pytestmark = pytest.mark.slow


@committing
def test_a_model_may_send_a_namespace_as_labels_or_joined_and_gets_labels_back(tenant_a, served):
    key = factories.api_key(agent=tenant_a.agent)[1]
    remembered, by_labels, by_text, stats, bad = calls(
        served.url, key,
        ("remember_fact", {"content": "Alice keeps bees", "namespace": "users/alice"}),
        ("search_memory", {"query": "Who keeps bees?", "namespace": ["users", "alice"]}),
        ("search_memory", {"query": "Who keeps bees?", "namespace": "users/alice"}),
        ("memory_stats", {"namespace": ["users", "alice"]}),
        ("remember_fact", {"content": "Bob keeps goats", "namespace": ["users/bob"]}),
    )
    memory = data_of(remembered)["memory"]
    assert memory["namespace"] == ["users", "alice"]
    assert [result["id"] for result in data_of(by_labels)["results"]] == [memory["id"]]
    assert data_of(by_text)["results"] == data_of(by_labels)["results"]
    assert data_of(stats)["memories"]["total"] == 1
    assert bad.is_error and "namespace" in text_of(bad) and "'/'" in text_of(bad)
