"""Full text looks for a query's words in all their forms, as one word each
(memories.retrieval.fulltext.query_terms, docs/adr/0071): PostgreSQL's stemmer leaves "buy"
and "bought", "go" and "went", "child" and "children" apart, and an agent asking "What did
Melanie buy?" needs the memory that says what she bought."""

import pytest

from memories.retrieval import fulltext
from memories.retrieval.filters import SearchFilters
from tenants.context import tenant_context
from tests import factories

pytestmark = pytest.mark.django_db

PATHS = ["index", "row by row"]


def stored(*contents, namespace="talk"):
    org = factories.organization("Forms")
    agent = factories.agent(org=org, name="forms agent")
    ids = {factories.memory(org=org, agent=agent, content=content, namespace=namespace).id: content
           for content in contents}
    return org, agent, ids


def found(org, contents, query, path) -> dict[str, float]:
    """Each full-text hit's content and score; row by row within the namespace."""
    filters = SearchFilters(namespace="talk") if path == "row by row" else SearchFilters()
    with tenant_context(org.id):
        hits = fulltext.search(org.id, fulltext.query_words(query), filters, 10, small=path == "row by row")
    return {contents[hit.memory_id]: hit.score for hit in hits}


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("query, answer", [
    ("What did she buy", "These figurines I bought yesterday remind me of family love."),
    ("Where has he gone on road trips", "Last weekend we went to Jasper with the whole family."),
    ("How many children", "My child loves the dinosaur exhibit."),
    ("How did she feel after the race", "I felt so proud crossing that line."),
])
def test_a_word_finds_its_irregular_forms(path, query, answer):
    org, _, contents = stored(answer, "I love the beach at sunset.", "Our dog learned a new trick.")
    assert list(found(org, contents, query, path)) == [answer]


@pytest.mark.parametrize("path", PATHS)
def test_a_words_forms_weigh_as_one_word(path):
    """"went" is in one memory and "go" in four: each form weighs what the word weighs, as
    rare as the five memories holding either make it, so a memory saying "went" does not
    outrank one saying "go" for being the rarer spelling."""
    org, _, contents = stored("Caroline: I go there often", "Caroline: I went there often",
                              "We go out on Fridays", "They go home early", "You go first")
    scores = found(org, contents, "Where did Caroline go", path)
    assert scores["Caroline: I went there often"] == pytest.approx(scores["Caroline: I go there often"])
    assert min(scores.values()) < scores["Caroline: I go there often"]  # the name still counts


@pytest.mark.parametrize("path", PATHS)
def test_an_auxiliary_brings_no_forms(path):
    """"might" could be read as "may", which is also a month: a question with "might" in it
    does not find what happened in May."""
    org, _, contents = stored("In May we moved to Ohio.", "The garden is blooming.")
    assert found(org, contents, "what might happen next", path) == {}
    assert list(found(org, contents, "what happened in May", path)) == ["In May we moved to Ohio."]


def test_through_the_api_a_question_finds_what_was_said_in_another_form(api_a, tenant_a):
    for content in ("Melanie: These figurines I bought yesterday remind me of family love.",
                    "Melanie: I signed up for a pottery class."):
        assert api_a.post("/api/v1/memories", {"content": content, "namespace": ["users", "mel"]},
                          format="json").status_code == 201
    body = {"query": "What did Melanie buy?", "mode": "fulltext", "filters": {"namespace": "users/mel"}}
    results = api_a.post("/api/v1/search", body, format="json").json()["results"]
    assert results[0]["memory"]["content"].startswith("Melanie: These figurines I bought")
