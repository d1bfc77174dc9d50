"""Entities in the console: the list (search by name or alias, kind and namespace filters,
pages), an entity's page (its fields, facts and timeline, linking to the memories), the
memory page's entities, and the navigation."""

import re
from datetime import datetime, timezone

import pytest

from memories.models import Entity, EntityAlias
from memories.writes import change, kernel
from tenants.context import tenant_context
from tests.console.conftest import remember

pytestmark = pytest.mark.django_db


@pytest.fixture
def viewer_a(console_as, tenant_a):
    return console_as(tenant_a.org, "viewer")


def _names(response) -> list[str]:
    assert response.status_code == 200, response.content
    return re.findall(r'<td class="content"><a href="[^"]+/entities/[0-9a-f-]{36}/">([^<]*)</a>',
                      response.content.decode())


def _entity(tenant, name, **fields) -> Entity:
    with tenant_context(tenant.org.id):
        return Entity.objects.get(name=name, **fields)


@pytest.fixture
def diary(tenant_a):
    """Caroline's memories in users/alice, through the write path (the extractor links them)."""
    joined = remember(tenant_a, "Caroline joined the Red Cross", namespace="users/alice",
                      event_time=datetime(2023, 5, 8, 10, tzinfo=timezone.utc),
                      entities=[{"name": "Caroline", "type": "person"}])
    moved = remember(tenant_a, "Caroline moved from Sweden", namespace="users/alice",
                     event_time=datetime(2019, 2, 1, tzinfo=timezone.utc))
    paints = remember(tenant_a, "Caroline likes painting", namespace="users/alice")
    gone = remember(tenant_a, "Caroline lived in Oslo", namespace="users/alice",
                    event_time=datetime(2018, 1, 1, tzinfo=timezone.utc))
    remember(tenant_a, "Adam lives in Porto", namespace="users/bob", entities=[{"name": "Adam", "type": "person"}])
    with tenant_context(tenant_a.org.id):
        change.memory_delete(org_id=tenant_a.org.id, memory_id=gone.pk, actor=kernel.Actor())
        caroline = Entity.objects.get(name="Caroline", namespace="users/alice")
        EntityAlias.objects.create(org=tenant_a.org, entity=caroline, alias="Caro", key="caro")
    return {"joined": joined, "moved": moved, "paints": paints, "gone": gone, "caroline": caroline}


def test_the_list_is_most_mentioned_first_and_searches_names_and_aliases(viewer_a, diary):
    names = _names(viewer_a.get(viewer_a.base + "entities/"))
    assert names[0] == "Caroline" and {"Red Cross", "Sweden", "Oslo", "Adam", "Porto", "Lisbon"} <= set(names)
    assert _names(viewer_a.get(viewer_a.base + "entities/", {"q": "caro"})) == ["Caroline"]
    assert _names(viewer_a.get(viewer_a.base + "entities/", {"q": "LISBOA"})) == ["Lisbon"]  # an alias
    assert _names(viewer_a.get(viewer_a.base + "entities/", {"q": "cross"})) == ["Red Cross"]


def test_the_list_filters_by_kind_and_namespace_and_the_url_keeps_them(viewer_a, diary):
    response = viewer_a.get(viewer_a.base + "entities/", {"kind": "place", "namespace": "users/bob"})
    assert _names(response) == ["Porto"]
    page = response.content.decode()
    assert '<option value="place" selected>' in page and 'value="users/bob"' in page
    assert set(_names(viewer_a.get(viewer_a.base + "entities/", {"namespace": "users/alice"}))) == {
        "Caroline", "Red Cross", "Sweden", "Oslo"}
    assert _names(viewer_a.get(viewer_a.base + "entities/", {"namespace": "users/ali"})) == []
    refused = viewer_a.get(viewer_a.base + "entities/", {"kind": "animal"})
    assert refused.status_code == 422 and 'role="alert"' in refused.content.decode()
    assert "Porto" not in refused.content.decode()


def test_the_list_pages_and_htmx_gets_the_results_alone(viewer_a, tenant_a, htmx):
    with tenant_context(tenant_a.org.id):
        Entity.objects.bulk_create([Entity(org=tenant_a.org, namespace="users/alice", kind="concept", name=f"Idea {i:02d}",
                                           key=f"idea {i:02d}") for i in range(60)])
    first = viewer_a.get(viewer_a.base + "entities/", {"kind": "concept"})
    assert len(_names(first)) == 50 and "in all" not in first.content.decode()  # no count of the whole list
    following = re.search(r'<a href="\?([^"]*)"[^>]*rel="next"', first.content.decode()).group(1)
    assert following.startswith("kind=concept&amp;cursor=")
    second = viewer_a.get(viewer_a.base + "entities/?" + following.replace("&amp;", "&"), **htmx("results"))
    body = second.content.decode()
    assert body.lstrip().startswith('<div id="results"') and "<html" not in body
    assert len(_names(second)) == 10 and not set(_names(first)) & set(_names(second))
    assert 'rel="next"' not in body and 'rel="prev"' in body


def test_an_entity_page_shows_its_fields_facts_and_timeline(viewer_a, diary):
    caroline = diary["caroline"]
    response = viewer_a.get(viewer_a.base + f"entities/{caroline.pk}/")
    assert response.status_code == 200
    page = response.content.decode()
    assert "<h1>Caroline <small>person</small></h1>" in page
    assert '<dd class="mono">users/alice</dd>' in page and '<span class="tag">Caro</span>' in page
    assert "<dt>Mentions</dt><dd>4</dd>" in page and "First seen" in page and "Last seen" in page
    facts = page.split("<h2>Facts</h2>")[1].split("<h2>Timeline</h2>")[0]
    timeline = page.split("<h2>Timeline</h2>")[1]
    linked = r'href="/console/[^/]+/memories/([0-9a-f-]{36})/"'
    assert re.findall(linked, facts) == [str(diary[name].pk) for name in ("paints", "moved", "joined")]
    assert re.findall(linked, timeline) == [str(diary[name].pk) for name in ("moved", "joined")]
    assert re.findall(r'<time datetime="([^"]+)">', timeline) == ["2019-02-01T00:00:00+00:00",
                                                                  "2023-05-08T10:00:00+00:00"]
    assert "Oslo" not in facts  # deleted: not a fact any more


def _entities_section(client, memory) -> str:
    page = client.get(client.base + f"memories/{memory.pk}/").content.decode()
    return page.split("<h2>Entities</h2>")[1].split("</ul>")[0]


def test_a_memory_page_lists_its_entities_linking_to_them(viewer_a, tenant_a, diary):
    section = _entities_section(viewer_a, diary["joined"])
    red_cross = _entity(tenant_a, "Red Cross")
    assert re.findall(r'<a href="([^"]+)">([^<]+)</a> <small>(\w+)</small>', section) == [
        (f"{viewer_a.base}entities/{red_cross.pk}/", "Red Cross", "organization"),
        (f"{viewer_a.base}entities/{diary['caroline'].pk}/", "Caroline", "person")]
    assert "None found." in _entities_section(viewer_a, tenant_a.memory)


def test_another_organisations_entity_is_a_404(viewer_a, tenant_a, tenant_b):
    assert viewer_a.get(viewer_a.base + f"entities/{tenant_b.entity.pk}/").status_code == 404
    assert viewer_a.get(f"/console/{tenant_b.org.slug}/entities/").status_code == 404
    assert viewer_a.get(viewer_a.base + f"entities/{tenant_a.entity.pk}/").status_code == 200
    assert _names(viewer_a.get(viewer_a.base + "entities/", {"q": "lisbon"})) == ["Lisbon"]  # A's only


def test_the_navigation_links_to_entities(viewer_a):
    page = viewer_a.get(viewer_a.base + "memories/").content.decode()
    assert f'<a href="{viewer_a.base}entities/">Entities</a>' in page
