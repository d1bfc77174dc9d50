"""LangGraph's list_namespaces, a walk of the store's distinct namespaces on an index
(docs/adr/0051), equals the distinct namespaces of every item computed in full, and crosses no
organisation's or key's namespaces."""

from datetime import timedelta

import pytest
from django.utils import timezone

from memories.access import KeyReach
from memories.models import Memory
from memories.store import reads
from tenants.context import tenant_context
from tests.console.conftest import remember

pytestmark = pytest.mark.django_db

NAMESPACES = [("users", "alice"), ("users", "alice", "prefs"), ("users", "alice2"), ("users", "bob", "prefs"),
              ("users-x", "carol"), ("users0",), ("users",), ("a", "b", "c"), ("a", "b"), ("a", "c", "f"),
              ("ünï", "cödé"), ("Users", "Zed")]


def put(api, namespace, key, **extra):
    response = api.put("/api/v1/store/items", {"namespace": list(namespace), "key": key, "value": {"v": 1},
                                               "index": False, **extra})
    assert response.status_code == 204, response.content


def full_listing(org_id, *, prefix=(), suffix=(), max_depth=None, limit=100, offset=0, within=()) -> list:
    """list_namespaces computed from every item of the organisation, in Python."""
    now = timezone.now()
    with tenant_context(org_id):
        scopes = {memory.namespace for memory in Memory.objects.filter(org_id=org_id, key__isnull=False,
                                                                         deleted_at__isnull=True)
                  if memory.namespace and (memory.expires_at is None or memory.expires_at > now)}

    def matches(labels, path, from_end):
        if len(labels) < len(path):
            return False
        part = labels[len(labels) - len(path):] if from_end else labels[:len(path)]
        return all(want in ("*", have) for want, have in zip(path, part))

    listed = set()
    for scope in scopes:
        labels = tuple(scope.split("/"))
        if within and not any(scope == w or scope.startswith(w + "/") for w in within):
            continue
        if matches(labels, prefix, False) and matches(labels, suffix, True):
            listed.add(labels[:max_depth] if max_depth is not None else labels)
    return [list(labels) for labels in sorted(listed)][offset:offset + limit]


LISTINGS = [{}, {"prefix": ("users",)}, {"prefix": ("users", "alice")}, {"prefix": ("users", "*", "prefs")},
            {"suffix": ("prefs",)}, {"prefix": ("*",), "max_depth": 1}, {"max_depth": 1},
            {"max_depth": 2, "limit": 3, "offset": 2}, {"prefix": ("a", "b")}, {"prefix": ("users-x",)},
            {"prefix": ("ünï",)}, {"prefix": ("nothing",)}, {"prefix": ("users",), "within": ("users/alice",)},
            {"within": ("users/bob", "a/c")}]


def test_list_namespaces_equals_the_distinct_namespaces_of_every_item(tenant_a, tenant_b, api_a, api_b):
    for number, namespace in enumerate(NAMESPACES):
        put(api_a, namespace, "k")
        put(api_a, namespace, "k2")
        put(api_b, ("beta",) + namespace, "k")  # another organisation's, under similar names
    put(api_a, ("gone", "deleted"), "k")
    put(api_a, ("gone", "expired"), "k", ttl=5)
    put(api_a, ("users", "dave"), "k", ttl=5)  # one expired item, one live one, in one namespace
    put(api_a, ("users", "dave"), "k2")
    with tenant_context(tenant_a.org.id):
        Memory.objects.filter(namespace="gone/deleted").update(deleted_at=timezone.now())
        Memory.objects.filter(namespace__in=["gone/expired", "users/dave"], key="k").update(
            expires_at=timezone.now() - timedelta(minutes=1))
        remember(tenant_a, "not a store item", namespace="plain/memory")

    for listing in LISTINGS:
        within = listing.get("within", ())
        arguments = {name: value for name, value in listing.items() if name != "within"}
        with tenant_context(tenant_a.org.id):
            found = reads.store_namespaces(org_id=tenant_a.org.id, reach=KeyReach(within), **arguments)
        assert found == full_listing(tenant_a.org.id, within=within, **arguments), listing
    with tenant_context(tenant_a.org.id):
        everything = reads.store_namespaces(org_id=tenant_a.org.id, limit=1000)
    assert ["gone", "deleted"] not in everything and ["gone", "expired"] not in everything
    assert ["users", "dave"] in everything and ["plain", "memory"] not in everything
    assert not any(labels[0] == "beta" for labels in everything)
    with tenant_context(tenant_b.org.id):
        assert all(labels[0] == "beta" for labels in reads.store_namespaces(org_id=tenant_b.org.id, limit=1000))
