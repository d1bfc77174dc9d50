"""Queries nobody would plan for still get an answer: a query of stop words, of punctuation or
of full-text operators, a time phrase that names no date a calendar holds, an entity that does
not exist. Each is a 200 with what could be found (or nothing), or a 4xx naming the field;
never a 500, and never a period the query did not name."""

import uuid

import pytest

from memories.models import RetrievalEvent
from tenants.context import tenant_context

pytestmark = pytest.mark.django_db

FACTS = ["Melanie painted a sunrise over the lake in May 2023",
         "Caroline moved from Sweden four years ago",
         "The team ships on Thursdays"]


@pytest.fixture
def facts(api_a):
    for content in FACTS:
        response = api_a.post("/api/v1/memories", {"content": content})
        assert response.status_code == 201, response.content


@pytest.mark.parametrize("mode", ["hybrid", "fulltext", "vector"])
@pytest.mark.parametrize("query", [
    "the of and is it to",  # stop words only: nothing for full text to match
    "?!... ---",
    "a & b | !c :* ( ) ' \\",  # tsquery's operators, taken as text
    "What happened 3000 years ago?",  # before the first date a datetime holds
    "What did she do 99999999 days ago?",
    "What happened on 31 February 2023?",
    "What did we do in Smarch 2023?",
    "What changed before the move?",
])
def test_an_odd_query_is_answered_not_failed(api_a, facts, query, mode):
    response = api_a.post("/api/v1/search", {"query": query, "mode": mode})
    assert response.status_code == 200, response.content
    body = response.json()
    assert isinstance(body["results"], list)
    if mode == "fulltext" and query.startswith("the of"):
        assert body["results"] == []


def test_stop_words_alone_find_nothing_by_their_words_but_hybrid_still_answers_by_meaning(api_a, facts):
    body = api_a.post("/api/v1/search", {"query": "the of and is it to", "limit": 3}).json()
    assert body["results"] and all("fulltext" not in result["signals"] for result in body["results"])


@pytest.mark.parametrize("query", ["What happened 3000 years ago?", "What did we do in Smarch 2023?",
                                   "What changed before the move?"])
def test_a_time_phrase_naming_no_date_reads_no_period_and_adds_no_time_signal(api_a, facts, query):
    understood = api_a.post("/api/v1/search", {"query": query}).json()["understood"]
    assert understood["period"] is None and "time" not in understood["signals"]


def test_a_query_of_ten_kilobytes_is_a_400_naming_the_query_and_records_nothing(tenant_a, api_a, facts):
    def events():
        with tenant_context(tenant_a.org.id):
            return RetrievalEvent.objects.count()

    before = events()
    assert api_a.post("/api/v1/search", {"query": "sunrise"}).status_code == 200 and events() == before + 1
    response = api_a.post("/api/v1/search", {"query": "remember " * 1250})
    assert response.status_code == 400 and "query" in response.json()["error"]["fields"], response.content
    assert events() == before + 1


@pytest.mark.parametrize("path", [f"/api/v1/entities/{uuid.uuid4()}", "/api/v1/entities/not-an-id",
                                  "/api/v1/entities/0"])
def test_an_unknown_entity_is_a_json_404(api_a, facts, path):
    response = api_a.get(path)
    assert response.status_code == 404 and response.json()["error"], response.content
