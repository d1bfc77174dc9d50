"""Entities on write (memories.writes.entities): a memory is linked to the people, places,
organisations, dates and quantities it mentions, resolved within its namespace by name,
alias or short name."""

import pytest

from memories.models import Entity, EntityAlias, MemoryEntity
from tenants.context import tenant_context

pytestmark = pytest.mark.django_db

ALICE = ["users", "alice"]


def write(api, content, namespace=ALICE, **fields):
    response = api.post("/api/v1/memories", {"content": content, "namespace": namespace, **fields})
    assert response.status_code == 201, response.content
    return response.json()["memory"]["id"]


def entities_of(org, memory_id) -> set[tuple[str, str]]:
    with tenant_context(org.id):
        return {(link.entity.name, link.entity.kind)
                for link in MemoryEntity.objects.filter(memory_id=memory_id).select_related("entity")}


def entity(org, name, namespace="users/alice") -> Entity:
    with tenant_context(org.id):
        return Entity.objects.get(namespace=namespace, name=name)


def test_a_memory_is_linked_to_what_it_mentions(api_a, tenant_a):
    memory_id = write(api_a, "Caroline: I moved from Sweden with 3 kids and joined the Red Cross on 8 May, 2023")
    assert entities_of(tenant_a.org, memory_id) == {
        ("Caroline", "person"), ("Sweden", "place"), ("Red Cross", "organization"), ("2023-05-08", "date"),
        ("3 kids", "quantity")}
    again = write(api_a, "Melanie: Caroline, how is Sweden?")
    assert entity(tenant_a.org, "Caroline").mention_count == 2 and entity(tenant_a.org, "Sweden").mention_count == 2
    assert entities_of(tenant_a.org, again) == {("Melanie", "person"), ("Caroline", "person"), ("Sweden", "place")}


def test_a_short_name_resolves_to_the_person_it_begins_either_way_round(api_a, tenant_a):
    write(api_a, "Melanie: the kids loved the beach")
    short = write(api_a, "Caroline: that sounds lovely, Mel")
    assert ("Melanie", "person") in entities_of(tenant_a.org, short)
    # Bob is first known by his short name, then by his full one: one person, named in full.
    write(api_a, "We met Rob at the market")
    full = write(api_a, "Dinner with Robert tonight")
    robert = entity(tenant_a.org, "Robert")
    assert ("Robert", "person") in entities_of(tenant_a.org, full)
    with tenant_context(tenant_a.org.id):
        assert list(EntityAlias.objects.filter(entity=robert).values_list("alias", flat=True)) == ["Rob"]
        assert not Entity.objects.filter(name="Rob").exists()


def test_aliases_the_agent_names_resolve_later_mentions(api_a, tenant_a):
    write(api_a, "Elizabeth starts her new job", entities=[{"name": "Elizabeth", "type": "person",
                                                            "aliases": ["Liz", "Beth"]}])
    later = write(api_a, "Had lunch with Beth and Liz")
    assert entities_of(tenant_a.org, later) == {("Elizabeth", "person")}


def test_a_namespace_keeps_its_own_entities(api_a, tenant_a):
    """The same name remembered for two end users is two entities, and an alias learnt in one
    namespace resolves nothing in the other."""
    write(api_a, "Melanie: hello", namespace=["users", "alice"])
    write(api_a, "Caroline: see you, Mel", namespace=["users", "alice"])
    bob = write(api_a, "The plumber Mel fixed the sink", namespace=["users", "bob"])
    write(api_a, "A call from Melanie", namespace=["users", "bob"])
    with tenant_context(tenant_a.org.id):
        assert Entity.objects.filter(name="Melanie").count() == 2
    assert entities_of(tenant_a.org, bob) == {("Melanie", "person")}  # Bob's Mel, then Bob's Melanie: his own


def test_a_batch_links_every_memory_with_a_few_statements(api_a, tenant_a, django_assert_max_num_queries):
    items = [{"content": f"Caroline: day {n} in Lisbon with Melanie", "namespace": ALICE} for n in range(50)]
    with django_assert_max_num_queries(60):
        response = api_a.post("/api/v1/memories", {"memories": items})
    assert response.status_code == 201
    assert entity(tenant_a.org, "Lisbon").mention_count == 50
    for result in response.json()["results"][:3]:
        assert entities_of(tenant_a.org, result["id"]) == {("Caroline", "person"), ("Lisbon", "place"),
                                                           ("Melanie", "person")}


def test_an_edit_finds_the_entities_again(api_a, tenant_a):
    memory_id = write(api_a, "Lunch with Jenny in Porto")
    version = api_a.get(f"/api/v1/memories/{memory_id}").json()["version"]
    response = api_a.patch(f"/api/v1/memories/{memory_id}", {"content": "Lunch with Jenny in Lisbon",
                                                             "version": version})
    assert response.status_code == 200, response.content
    assert entities_of(tenant_a.org, memory_id) == {("Jenny", "person"), ("Lisbon", "place")}


def test_a_bad_entity_is_refused_by_field(api_a, tenant_a):
    response = api_a.post("/api/v1/memories", {"content": "x", "entities": [{"name": "X", "type": "planet"}]})
    assert response.status_code == 400 and "entities" in str(response.json())
    with tenant_context(tenant_a.org.id):
        assert not Entity.objects.filter(name="X").exists()


def test_the_names_an_agent_gives_are_redacted_like_the_memory(api_a, tenant_a):
    secret = "ghp_16C7e42F292c6912E7710c838347Ae178B4a"
    write(api_a, "A token turned up in the logs", entities=[{"name": secret, "type": "tool", "aliases": [secret]}])
    with tenant_context(tenant_a.org.id):
        assert not Entity.objects.filter(name__contains="ghp_").exists()
        assert not EntityAlias.objects.filter(alias__contains="ghp_").exists()
        assert Entity.objects.filter(kind="tool", name__startswith="[REDACTED:").exists()


def test_a_speaker_is_linked_as_the_speaker_and_whom_they_name_as_mentioned(api_a, tenant_a):
    write(api_a, "Caroline: I went to the parade")
    memory_id = write(api_a, "Melanie: Caroline, how was the parade?",
                      entities=[{"name": "Melanie", "type": "person"}])  # named by the agent too
    with tenant_context(tenant_a.org.id):
        roles = {link.entity.name: link.role
                 for link in MemoryEntity.objects.filter(memory_id=memory_id).select_related("entity")}
    assert roles == {"Melanie": "speaker", "Caroline": "mentioned"}



def test_a_first_name_alone_is_the_one_person_of_that_full_name_either_way_round(api_a, tenant_a):
    """Issue 33: "Bob" and "Bob Smith" in one namespace are one person, when no other Bob is."""
    write(api_a, "Lunch with Bob Smith at the harbour")
    short = write(api_a, "Had a call with Bob about the boat")
    assert entities_of(tenant_a.org, short) == {("Bob Smith", "person")}
    # The other way round: Carla first, then Carla Diaz: the same person, named in full.
    write(api_a, "We met Carla at the market")
    full = write(api_a, "Dinner with Carla Diaz tonight")
    assert entities_of(tenant_a.org, full) == {("Carla Diaz", "person")}
    with tenant_context(tenant_a.org.id):
        assert not Entity.objects.filter(namespace="users/alice", name__in=["Bob", "Carla"]).exists()
        assert list(EntityAlias.objects.filter(entity__name="Carla Diaz").values_list("alias", flat=True)) == ["Carla"]
    # Two Bobs known (and "Bob" not yet learnt as either's): "Bob" alone is neither of them.
    two = ["users", "dave"]
    write(api_a, "Lunch with Bob Smith at the harbour", namespace=two)
    write(api_a, "Bob Jones fixed the sink", namespace=two)
    ambiguous = write(api_a, "Had a call with Bob about the boat", namespace=two)
    assert entities_of(tenant_a.org, ambiguous) == {("Bob", "person")}
    # Another namespace's Bob Smith is not this one's Bob.
    elsewhere = write(api_a, "Had a call with Bob about the roof", namespace=["users", "carol"])
    assert entities_of(tenant_a.org, elsewhere) == {("Bob", "person")}


def test_siemens_after_at_is_an_organisation(api_a, tenant_a):
    memory_id = write(api_a, "Caroline: I started work at Siemens in Munich")
    assert entities_of(tenant_a.org, memory_id) == {("Caroline", "person"), ("Siemens", "organization"),
                                                   ("Munich", "place")}


def test_a_name_in_a_weak_speaker_shape_the_namespace_knows_as_a_place_is_that_place(api_a, tenant_a):
    write(api_a, "We moved to Paris last spring")
    memory_id = write(api_a, "Paris - the best city for a long walk")
    with tenant_context(tenant_a.org.id):
        links = {(link.entity.name, link.entity.kind, link.role)
                 for link in MemoryEntity.objects.filter(memory_id=memory_id).select_related("entity")}
    assert links == {("Paris", "place", "mentioned")}
    # The strong shapes still make a person speak.
    spoken = write(api_a, "Paris: hi all", namespace=["users", "erin"])
    assert entities_of(tenant_a.org, spoken) == {("Paris", "person")}
