"""What lies under a namespace prefix: one rule (access.namespace_bounds), spelled in Python, in
SQL for the search and as an ORM filter, and all three find the same memories."""

import pytest
from django.db import connection

from memories.access import KeyReach, namespace_bounds, namespace_prefix_filter, namespace_sql, under_namespace
from memories.models import Memory
from memories.retrieval.filters import SearchFilters
from tenants.context import tenant_context
from tests import factories

pytestmark = pytest.mark.django_db

NAMESPACES = ["users/alice", "users/alice/x", "users/alice/x/y", "users/alice/", "users/alice2", "users/alice0",
          "users/alice.x", "users/alic", "users/alicé", "users/alice/é", "users", "", "xusers/alice/x",
          "Users/alice/x"]
UNDER_ALICE = {"users/alice", "users/alice/x", "users/alice/x/y", "users/alice/", "users/alice/é"}


def test_the_bounds_hold_the_namespace_and_what_starts_with_it_and_a_slash():
    assert namespace_bounds("/users/alice/") == ("users/alice", "users/alice/", "users/alice0")
    assert {namespace for namespace in NAMESPACES if under_namespace(namespace, "users/alice")} == UNDER_ALICE
    assert {namespace for namespace in NAMESPACES if under_namespace(namespace, "users/alice")} == {
        namespace for namespace in NAMESPACES if namespace == "users/alice" or namespace.startswith("users/alice/")}
    reach = KeyReach(namespaces=("users/alice",))
    assert {namespace for namespace in NAMESPACES if reach.covers(namespace)} == UNDER_ALICE


def test_sql_orm_and_python_agree_on_what_is_under_a_prefix(tenant_a):
    with tenant_context(tenant_a.org.id):
        ids = [str(factories.memory(org=tenant_a.org, agent=tenant_a.agent, content=f"In {namespace!r}",
                                    namespace=namespace).pk)
               for namespace in NAMESPACES]
        for prefix in ("users/alice", "users", "users/alic", "/users/alice/"):
            expected = {namespace for namespace in NAMESPACES if under_namespace(namespace, prefix)}
            orm = set(Memory.objects.filter(namespace_prefix_filter(prefix), pk__in=ids)
                      .values_list("namespace", flat=True))
            condition, params = namespace_sql(prefix, "m.scope")
            with connection.cursor() as cursor:
                cursor.execute(f"SELECT m.scope FROM memories m WHERE m.id = ANY(%s::uuid[]) AND {condition}",
                               [ids, *params])
                sql = {row[0] for row in cursor.fetchall()}
                where, where_params = SearchFilters(namespace=prefix).where(tenant_a.org.id)
                cursor.execute(f"SELECT m.scope FROM memories m WHERE {where} AND m.id = ANY(%s::uuid[])",
                               [*where_params, ids])
                search = {row[0] for row in cursor.fetchall()}
            assert orm == sql == search == expected, prefix
