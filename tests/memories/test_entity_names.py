"""Finding an entity by the start of a word of its name or of an alias (memories.reads.selectors.
entity_list, migration 0045, docs/adr/0053): the index of the keys' tails finds exactly what the
LIKE it replaced found, in the same order, within one organisation and one namespace prefix."""

import uuid

import pytest

from memories.models import Entity, EntityAlias
from memories.reads import selectors
from memories.understanding.entities import name_key
from tenants.context import service_account, tenant_context
from tenants.models import Organization

pytestmark = pytest.mark.django_db

NAMES = [  # (name, aliases, namespace, mentions)
    ("John Smith", ["Johnny"], "users/alice", 9),
    ("Smithers", [], "users/alice", 8),
    ("Mary-Jane Watson", ["MJ"], "users/alice", 7),
    ("Jean Paul Sartre", ["J.-P. Sartre"], "users/bob", 6),
    ("O'Brien's Pub", [], "users/bob", 5),
    ("Ölfusá River", [], "users/bob", 4),
    ("Café de Flore", ["Flore"], "", 3),
    ("under_score 100%", [], "", 2),
    ("Anna", ["Annie Smythe"], "users/alice2", 1),
    ("Back\\slash Co", [], "users/alice", 1),
]
QUERIES = ["j", "jo", "JOHN S", "john smith", "smith", "smi", "mith", "s", "mary", "jane", "mary-j", "watson",
           "paul", "paul sar", "jean paul sartre", "sartre", "p sartre", "o brien", "brien", "pub", "öl", "ÖLFUSÁ",
           "river", "café", "cafe", "de f", "flore", "under_", "under_score 100", "100", "score", "an", "annie",
           "smythe", "mj", "johnny", "x", "back", "slash", "back\\", "'", "a'b", "zz"]


def old_rule(org_id, query: str, namespace: str | None = None) -> list[str]:
    """The rule before migration 0045, as it was written: LIKE on the keys of the entities and
    their aliases."""
    key = name_key(query)
    if not key:
        return []
    queryset = Entity.objects.filter(org_id=org_id)
    if namespace:
        from memories.access import namespace_prefix_filter

        queryset = queryset.filter(namespace_prefix_filter(namespace))
    from django.db.models import Q

    named = Q(key__startswith=key) | Q(key__contains=f" {key}")
    aliased = EntityAlias.objects.filter(named, org_id=org_id)
    return [row.name for row in queryset.filter(named | Q(pk__in=aliased.values("entity_id")))
            .order_by("-mention_count", "-id")]


def found(org_id, query: str, namespace: str | None = None) -> list[str]:
    return [row.name for row in selectors.entity_list(org_id=org_id, query=query, namespace=namespace)]


def named(org, entries=NAMES):
    with tenant_context(org.id):
        for name, aliases, namespace, mentions in entries:
            row = Entity.objects.create(org=org, namespace=namespace, kind="person", name=name, key=name_key(name),
                                        mention_count=mentions)
            for alias in aliases:
                EntityAlias.objects.create(org=org, entity=row, alias=alias, key=name_key(alias))


@pytest.fixture
def twin(org_a):
    """An organisation whose id begins with org_a's first 8 hex digits: the tag of its tails
    (migration 0045) is org_a's."""
    same_start = uuid.UUID(str(org_a.id)[:8] + str(uuid.uuid4())[8:])
    with service_account():
        return Organization.objects.create(id=same_start, name="Twin", slug=f"twin-{same_start.hex[:6]}")


@pytest.mark.parametrize("by_id", [1000, 1], ids=["matches listed by id", "most mentioned walked"])
def test_every_query_finds_what_the_like_found_in_the_same_order(org_a, org_b, twin, monkeypatch, by_id):
    monkeypatch.setattr(selectors, "NAMED_BY_ID", by_id)  # 1: more than one match is walked in order
    named(org_a)
    named(org_b)  # the same names in other organisations: never found from org_a
    named(twin)
    with tenant_context(org_a.id):
        for query in QUERIES:
            assert found(org_a.id, query) == old_rule(org_a.id, query), query
            for namespace in ("users/alice", "users", "users/bob"):
                assert found(org_a.id, query, namespace) == old_rule(org_a.id, query, namespace), (query, namespace)
        ids = {row.org_id for row in selectors.entity_list(org_id=org_a.id, query="s")}
    assert ids == {org_a.id}


@pytest.mark.parametrize(("query", "expected"), [
    ("smi", ["John Smith", "Smithers"]),  # the start of any word of the name
    ("SMI", ["John Smith", "Smithers"]),  # whatever the case
    ("john s", ["John Smith"]),  # across words
    ("mith", []),  # not the middle of a word
    ("smy", ["Anna"]),  # a word of an alias
    ("jane", []),  # a hyphen does not start a word
    ("brien", ["O'Brien's Pub"]),  # the apostrophe does (name_key folds it to a space)
    ("ölf", ["Ölfusá River"]),
    ("back\\", ["Back\\slash Co"]),  # folds to "back": a backslash is no word character
    ("?!", []),  # folds to nothing: names nothing
])
def test_matching(org_a, query, expected):
    named(org_a)
    with tenant_context(org_a.id):
        assert found(org_a.id, query) == expected


def test_a_namespace_prefix_and_another_organisation_keep_their_entities(org_a, org_b, twin):
    named(org_a)
    named(twin, [("Smith Twin", [], "users/alice", 99)])
    with tenant_context(org_a.id):
        assert found(org_a.id, "smi", "users/alice") == ["John Smith", "Smithers"]
        assert found(org_a.id, "smy", "users/alice") == []  # Anna is in users/alice2
        assert found(org_a.id, "smi", "users/bob") == []
    with tenant_context(twin.id):
        assert found(twin.id, "smi") == ["Smith Twin"]
        assert found(twin.id, "john") == []
    with tenant_context(org_b.id):  # row-level security: org_a's tails are not org_b's to read
        assert found(org_a.id, "smi") == []


def test_the_tails_follow_a_renamed_entity_and_its_aliases(org_a):
    named(org_a, [("Lisbon", ["Lisboa"], "", 1)])
    with tenant_context(org_a.id):
        Entity.objects.filter(org_id=org_a.id).update(name="Porto", key="porto")
        assert found(org_a.id, "lis") == ["Porto"]  # still by its alias
        EntityAlias.objects.filter(org_id=org_a.id).delete()
        assert found(org_a.id, "lis") == []
        assert found(org_a.id, "por") == ["Porto"]

