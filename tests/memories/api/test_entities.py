"""The entities endpoints: who and what the memories mention, filtered and paged, and one
entity with the memories that mention it (facts) and those that say when (timeline); within
one organisation and a key's reach."""

from datetime import timedelta

import pytest
from django.utils import timezone

from memories.models import Entity, EntityAlias, Memory, MemoryEntity
from memories.writes import change, kernel
from tenants.context import tenant_context
from tests import factories

pytestmark = pytest.mark.django_db

ALICE, BOB = "users/alice", "users/bob"


def error(response, status):
    assert response.status_code == status, response.content
    assert response["Content-Type"].startswith("application/json")
    return response.json()["error"]


def entity(tenant, name, *, kind="person", namespace=ALICE, mentions=1, aliases=()) -> Entity:
    from memories.understanding.entities import name_key

    with tenant_context(tenant.org.id):
        row = Entity.objects.create(org=tenant.org, namespace=namespace, kind=kind, name=name, key=name_key(name),
                                    mention_count=mentions)
        for alias in aliases:
            EntityAlias.objects.create(org=tenant.org, entity=row, alias=alias, key=name_key(alias))
    return row


def mentioned(tenant, about: Entity, content, *, namespace=None, event_time=None, days_ago=0) -> Memory:
    """A memory that mentions `about`, written `days_ago` days ago."""
    memory = factories.memory(org=tenant.org, agent=tenant.agent, content=content,
                              namespace=about.namespace if namespace is None else namespace, event_time=event_time)
    with tenant_context(tenant.org.id):
        Memory.objects.filter(pk=memory.pk).update(created_at=timezone.now() - timedelta(days=days_ago))
        MemoryEntity.objects.create(org=tenant.org, memory=memory, entity=about, mention=about.name)
    return memory


def names(response) -> list[str]:
    assert response.status_code == 200, response.content
    return [row["name"] for row in response.json()["results"]]


@pytest.fixture
def people(tenant_a):
    """Beside tenant_a's Lisbon (memories/user-1, one mention, alias Lisboa)."""
    return {
        "caroline": entity(tenant_a, "Caroline", mentions=5, aliases=["Caro"]),
        "melanie": entity(tenant_a, "Melanie", mentions=2, aliases=["Mel"]),
        "adam": entity(tenant_a, "Adam", namespace=BOB, mentions=2),
        "smith": entity(tenant_a, "John Smith", namespace="users/alice2", mentions=1),
        "red_cross": entity(tenant_a, "Red Cross", kind="organization", namespace=BOB, mentions=1),
    }


# --------------------------------------------------------------------------- the list


def by_id_descending(*entities) -> list[str]:
    return [row.name for row in sorted(entities, key=lambda row: row.id, reverse=True)]


def test_the_list_is_most_mentioned_first_then_by_id(api_a, tenant_a, people):
    response = api_a.get("/api/v1/entities")
    assert names(response) == ["Caroline", *by_id_descending(people["adam"], people["melanie"]),
                               *by_id_descending(people["smith"], tenant_a.entity, people["red_cross"])]
    body = response.json()
    assert body["count"] is None and body["next"] is None and body["previous"] is None  # paged by key: no count
    assert api_a.get("/api/v1/entities", {"offset": 0}).json()["count"] == 6  # the old way counts
    lisbon = next(row for row in body["results"] if row["name"] == "Lisbon")
    assert lisbon == {
        "id": str(tenant_a.entity.id), "name": "Lisbon", "type": "place", "scope": "memories/user-1",
        "namespace": ["memories", "user-1"], "aliases": ["Lisboa"], "summary": "", "attributes": {},
        "mention_count": 1, "first_seen_at": lisbon["first_seen_at"], "last_seen_at": lisbon["last_seen_at"]}
    assert "facts" not in lisbon


@pytest.mark.parametrize(("query", "expected"), [
    ({"type": "place"}, ["Lisbon"]),
    ({"type": "organization"}, ["Red Cross"]),
    ({"namespace": "users", "limit": 1}, ["Caroline"]),
    ({"namespace": "users/alice"}, ["Caroline", "Melanie"]),  # not users/alice2
    ({"namespace": "/users/bob/"}, ["Adam", "Red Cross"]),
    ({"namespace": "users/ali"}, []),
    ({"namespace": "users/bob", "type": "person"}, ["Adam"]),
    ({"q": "caroline"}, ["Caroline"]),
    ({"q": "CAR"}, ["Caroline"]),
    ({"q": "lisboa"}, ["Lisbon"]),  # an alias
    ({"q": "Mel"}, ["Melanie"]),
    ({"q": "smi"}, ["John Smith"]),  # the beginning of a word of the name
    ({"q": "cross", "namespace": "users/bob"}, ["Red Cross"]),
    ({"q": "aroline"}, []),  # the middle of a word is not a match
    ({"q": "?!"}, []),  # folds to nothing: names nothing
])
def test_the_list_filters(api_a, people, query, expected):
    assert names(api_a.get("/api/v1/entities", query)) == expected


@pytest.mark.parametrize("first", ["/api/v1/entities?limit=4", "/api/v1/entities?limit=4&offset=0"])
def test_the_list_pages_by_key_or_by_offset_with_a_constant_number_of_queries(api_a, tenant_a, people, first,
                                                                               django_assert_max_num_queries):
    for i in range(6):
        entity(tenant_a, f"Extra {i}", aliases=[f"x{i}", f"y{i}"])
    seen, url = [], first
    while url:
        with django_assert_max_num_queries(12):
            page = api_a.get(url).json()
        assert len(page["results"]) <= 4 and page["count"] == (12 if "offset" in first else None)
        seen += [row["id"] for row in page["results"]]
        url = page["next"]
    assert len(seen) == len(set(seen)) == 12
    assert names(api_a.get("/api/v1/entities", {"limit": 2, "offset": 1})) == by_id_descending(people["adam"],
                                                                                                people["melanie"])


@pytest.mark.parametrize(("query", "field"), [
    ({"type": "animal"}, "type"), ({"limit": "0"}, "limit"), ({"limit": "101"}, "limit"), ({"limit": "x"}, "limit"),
    ({"offset": "-1"}, "offset"), ({"cursor": "nonsense"}, "cursor"), ({"cursor": "e30", "offset": "1"}, "cursor"),
    ({"q": ""}, "q"), ({"q": "x" * 257}, "q"), ({"colour": "teal"}, "colour"),
])
def test_the_list_refuses_bad_query_parameters_naming_them(api_a, query, field):
    problem = error(api_a.get("/api/v1/entities", query), 400)
    assert problem["code"] == "invalid" and field in problem["fields"]


# --------------------------------------------------------------------------- one entity


def test_an_entity_with_its_facts_newest_first_and_its_timeline_earliest_first(api_a, tenant_a, people):
    caroline = people["caroline"]
    joined = mentioned(tenant_a, caroline, "Caroline joined the Red Cross", days_ago=3,
                       event_time="2023-05-08T10:00:00Z")
    moved = mentioned(tenant_a, caroline, "Caroline moved from Sweden", days_ago=2,
                      event_time="2019-02-01T00:00:00Z")
    likes = mentioned(tenant_a, caroline, "Caroline likes painting", days_ago=1)
    gone = mentioned(tenant_a, caroline, "Caroline lived in Oslo", event_time="2018-01-01T00:00:00Z")
    archived = mentioned(tenant_a, caroline, "Caroline was a teacher", event_time="2017-01-01T00:00:00Z")
    mentioned(tenant_a, people["melanie"], "Melanie paints too")
    with tenant_context(tenant_a.org.id):
        change.memory_delete(org_id=tenant_a.org.id, memory_id=gone.pk, actor=kernel.Actor())
        change.memory_archive(org_id=tenant_a.org.id, memory_id=archived.pk, actor=kernel.Actor())

    response = api_a.get(f"/api/v1/entities/{caroline.id}")
    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["id"], body["name"], body["type"], body["namespace"], body["aliases"], body["mention_count"]) == (
        str(caroline.id), "Caroline", "person", ["users", "alice"], ["Caro"], 5)
    assert [fact["id"] for fact in body["facts"]] == [str(likes.id), str(moved.id), str(joined.id)]
    assert body["facts"][0] == {"id": str(likes.id), "content": "Caroline likes painting",
                                "namespace": ["users", "alice"], "event_time": None,
                                "created_at": body["facts"][0]["created_at"]}
    assert [(fact["id"], fact["event_time"]) for fact in body["timeline"]] == [
        (str(moved.id), "2019-02-01T00:00:00Z"), (str(joined.id), "2023-05-08T10:00:00Z")]


def test_facts_and_timeline_are_capped(api_a, tenant_a, people):
    caroline = people["caroline"]
    for day in range(55):
        mentioned(tenant_a, caroline, f"Caroline's note number {day}", days_ago=day,
                  event_time=timezone.now() - timedelta(days=day))
    body = api_a.get(f"/api/v1/entities/{caroline.id}").json()
    assert len(body["facts"]) == 20 and body["facts"][0]["content"] == "Caroline's note number 0"
    assert len(body["timeline"]) == 50 and body["timeline"][0]["content"] == "Caroline's note number 54"


def test_an_entity_the_agent_names_on_write_is_found_with_its_memory(api_a):
    written = api_a.post("/api/v1/memories", {
        "content": "Liz started her new job on 3 March, 2024", "namespace": ["users", "carol"],
        "event_time": "2024-03-03T09:00:00Z",
        "entities": [{"name": "Elizabeth", "type": "person", "aliases": ["Liz"]}]})
    assert written.status_code == 201, written.content
    [found] = api_a.get("/api/v1/entities", {"q": "liz", "namespace": "users/carol"}).json()["results"]
    assert (found["name"], found["aliases"], found["mention_count"]) == ("Elizabeth", ["Liz"], 1)
    detail = api_a.get(f"/api/v1/entities/{found['id']}").json()
    memory_id = written.json()["memory"]["id"]
    assert [fact["id"] for fact in detail["facts"]] == [fact["id"] for fact in detail["timeline"]] == [memory_id]


def test_an_unknown_entity_is_404(api_a):
    problem = error(api_a.get("/api/v1/entities/00000000-0000-0000-0000-000000000000"), 404)
    assert problem["code"] == "not_found"


# --------------------------------------------------------------------------- tenants and reach


def test_another_organisations_entities_are_missing(api_b, tenant_a, tenant_b):
    problem = error(api_b.get(f"/api/v1/entities/{tenant_a.entity.id}"), 404)
    assert problem["code"] == "not_found" and str(tenant_a.entity.id) in problem["message"]
    listed = api_b.get("/api/v1/entities", {"q": "lisbon"}).json()["results"]
    assert [row["id"] for row in listed] == [str(tenant_b.entity.id)]
    assert api_b.get(f"/api/v1/entities/{tenant_b.entity.id}").json()["facts"][0]["id"] == str(
        tenant_b.other_memory.id)


@pytest.fixture
def alice_key(tenant_a):
    from rest_framework.test import APIClient

    _, key = factories.api_key(agent=tenant_a.agent, name="alice only", namespaces=[ALICE], read_only=True)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    return client


def test_a_key_limited_to_namespaces_lists_and_reads_only_their_entities(api_a, tenant_a, people, alice_key):
    assert names(alice_key.get("/api/v1/entities")) == ["Caroline", "Melanie"]
    assert names(alice_key.get("/api/v1/entities", {"namespace": "users"})) == ["Caroline", "Melanie"]
    assert names(alice_key.get("/api/v1/entities", {"namespace": BOB})) == []
    assert names(alice_key.get("/api/v1/entities", {"q": "adam"})) == []
    assert alice_key.get("/api/v1/entities", {"offset": 0}).json()["count"] == 2
    for outside in (people["adam"], people["smith"], tenant_a.entity):
        assert error(alice_key.get(f"/api/v1/entities/{outside.id}"), 404)["code"] == "not_found"
    assert api_a.get(f"/api/v1/entities/{people['adam'].id}").status_code == 200  # the organisation's key


def test_a_limited_key_reads_an_entitys_facts_within_its_reach_only(api_a, tenant_a, people, alice_key):
    caroline = people["caroline"]
    own = mentioned(tenant_a, caroline, "Caroline paints", event_time="2023-01-01T00:00:00Z")
    # A link across namespaces is not made by the write path; were one there, it stays out of
    # reach, and out of the entity's facts altogether: another end user's memory is not this one's.
    elsewhere = mentioned(tenant_a, caroline, "Bob met Caroline", namespace=BOB, event_time="2023-02-01T00:00:00Z")
    limited = alice_key.get(f"/api/v1/entities/{caroline.id}").json()
    assert [f["id"] for f in limited["facts"]] == [f["id"] for f in limited["timeline"]] == [str(own.id)]
    everything = api_a.get(f"/api/v1/entities/{caroline.id}").json()
    assert [f["id"] for f in everything["facts"]] == [f["id"] for f in everything["timeline"]] == [str(own.id)]
    assert str(elsewhere.id) not in str(everything)


@pytest.mark.parametrize("mention_count", [1, 10_000])  # read by the entity's links; by walking its namespace
def test_facts_and_timeline_are_the_same_whichever_way_they_are_read(tenant_a, mention_count):
    """An entity most of its namespace mentions is read by walking the namespace's memories in
    the list's order (memories.reads.selectors._linked_memories); one seldom mentioned, by its
    links. Either way: the live memories of its namespace that mention it, in reach, in order."""
    from memories.access import KeyReach
    from memories.reads import selectors

    caroline = entity(tenant_a, "Caroline", mentions=mention_count)
    written = []
    for number in range(30):
        memory = mentioned(tenant_a, caroline, f"Caroline's day {number}", days_ago=number,
                           event_time=timezone.now() - timedelta(days=(number * 7) % 30) if number % 3 else None)
        written.append(memory)
    quiet = [factories.memory(org=tenant_a.org, agent=tenant_a.agent, content=f"not about her {n}", namespace=ALICE)
             for n in range(6)]
    below = mentioned(tenant_a, caroline, "Caroline's trip", namespace=ALICE + "/trips")  # another namespace
    with tenant_context(tenant_a.org.id):
        Memory.objects.filter(pk=written[0].pk).update(deleted_at=timezone.now())
        Memory.objects.filter(pk=written[1].pk).update(status=Memory.Status.ARCHIVED)
        Memory.objects.filter(pk=written[2].pk).update(expires_at=timezone.now() - timedelta(minutes=1))
        live = [m for m in Memory.objects.filter(pk__in=[m.pk for m in written])
                if m.is_live and (m.expires_at is None or m.expires_at > timezone.now())]
        facts = selectors.entity_facts(org_id=tenant_a.org.id, entity=caroline, limit=5)
        timeline = selectors.entity_timeline(org_id=tenant_a.org.id, entity=caroline, limit=5)
        outside = selectors.entity_facts(org_id=tenant_a.org.id, entity=caroline, limit=5,
                                         reach=KeyReach(("users/bob",)))
    assert [m.pk for m in facts] == [m.pk for m in sorted(live, key=lambda m: (m.created_at, m.pk), reverse=True)][:5]
    timed = sorted((m for m in live if m.event_time), key=lambda m: (m.event_time, m.created_at, m.pk))
    assert [m.pk for m in timeline] == [m.pk for m in timed][:5]
    assert outside == [] and below.pk not in {m.pk for m in facts} and not {m.pk for m in quiet} & {m.pk for m in facts}
