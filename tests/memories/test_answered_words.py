"""A memory written right after one that asks (its text holds a "?") also holds, for full
text, the question's words at BM25_ASKED_WEIGHT (memories.retrieval.fulltext, docs/adr/0070):
"Civilization VI, for about a month now" answers "What game have you been playing lately?",
and a search for the game played should find it, though it says neither word."""

import pytest

from memories.retrieval import fulltext
from memories.retrieval.filters import SearchFilters
from tenants.context import tenant_context
from tests import factories
from tests.knobs import with_search_knobs
from tests.memories.api.conversation import store

pytestmark = pytest.mark.django_db

# Written in this order, in one namespace.
CONVERSATION = {
    "question": "John: What game have you been playing lately?",
    "answer": "James: Civilization VI, for about a month now",
    "statement": "John: I played chess with my uncle last night.",
    "after_statement": "James: Sounds like a great evening",
}
QUERY = "Which game have they been playing"  # game, play: the answer holds neither
PATHS = ["index", "row by row"]


@pytest.fixture
def conversation():
    org = factories.organization("Answers")
    agent = factories.agent(org=org, name="answers agent")
    ids = {name: factories.memory(org=org, agent=agent, content=content, namespace="talk").id
           for name, content in CONVERSATION.items()}
    return org, agent, {memory_id: name for name, memory_id in ids.items()}


def found(org, names, query=QUERY, filters=None, path="index", answers=True) -> list[tuple[str, float]]:
    """(name, score) of the full-text hits, best first; row by row when filtered."""
    if path == "row by row" and filters is None:
        filters = SearchFilters(namespace="talk")
    with tenant_context(org.id):
        hits = fulltext.search(org.id, fulltext.query_words(query), filters or SearchFilters(), 10,
                               small=path == "row by row", answers=answers)
    return [(names.get(hit.memory_id, str(hit.memory_id)), hit.score) for hit in hits]


@pytest.mark.parametrize("path", PATHS)
def test_the_answer_to_a_question_is_found_by_the_questions_words(conversation, path):
    org, _, names = conversation
    hits = dict(found(org, names, path=path))
    assert set(hits) == {"question", "statement", "answer"}
    # It holds the words at half weight, so less than the question itself does.
    assert 0 < hits["answer"] < hits["question"]


@pytest.mark.parametrize("path", PATHS)
def test_a_memory_after_one_that_asks_nothing_takes_none_of_its_words(conversation, path):
    org, _, names = conversation
    assert "after_statement" not in dict(found(org, names, "chess uncle", path=path))
    assert [name for name, _ in found(org, names, "chess uncle", path=path)] == ["statement"]


@pytest.mark.parametrize("path", PATHS)
def test_weight_zero_and_a_search_that_wants_no_answers_find_the_words_alone(conversation, path, settings):
    org, _, names = conversation
    assert "answer" not in dict(found(org, names, path=path, answers=False))
    settings.MEMORY_PLATFORM = with_search_knobs(settings.MEMORY_PLATFORM, BM25_ASKED_WEIGHT=0.0)
    assert set(dict(found(org, names, path=path))) == {"question", "statement"}


@pytest.mark.parametrize("path", PATHS)
def test_a_question_lends_its_words_only_within_its_namespace(path):
    """The memory written right after a question, in another namespace (another end user),
    is no answer to it: its namespace's order is its own."""
    org = factories.organization("Two users")
    agent = factories.agent(org=org, name="agent")
    question = factories.memory(org=org, agent=agent, content="What game have you been playing lately?",
                                namespace="users/1")
    other = factories.memory(org=org, agent=agent, content="Civilization VI, for about a month now",
                             namespace="users/2")
    names = {question.id: "question", other.id: "other"}
    for filters in (None, SearchFilters(namespace="users/2"), SearchFilters(namespace="users")):
        if filters is None and path == "row by row":
            continue
        assert "other" not in dict(found(org, names, filters=filters or SearchFilters(), path=path))


@pytest.mark.parametrize("path", PATHS)
def test_an_answer_the_searchs_filters_leave_out_is_not_found(conversation, path):
    """The answer passes the search's own filters like any hit: here it is another agent's."""
    org, agent, names = conversation
    other_agent = factories.agent(org=org, name="other agent")
    question = factories.memory(org=org, agent=agent, content="Which board game do you play on Sundays?",
                                namespace="club")
    reply = factories.memory(org=org, agent=other_agent, content="Settlers of Catan, every week",
                             namespace="club")
    names |= {question.id: "club question", reply.id: "club reply"}
    mine = SearchFilters(namespace="club", agent_ids=[agent.id])
    assert set(dict(found(org, names, filters=mine, path=path))) == {"club question"}
    both = SearchFilters(namespace="club")
    assert set(dict(found(org, names, filters=both, path=path))) == {"club question", "club reply"}


def test_through_the_api_a_when_question_lends_no_words(api_a):
    """A "when" question is answered by the memory that says when; the words of a question
    lifted onto its reply would bring replies that say no time (docs/adr/0070)."""
    ids = store(api_a, "chat/1", list(CONVERSATION.values()))

    def fulltext_ids(query):
        response = api_a.post("/api/v1/search", {"query": query, "mode": "fulltext",
                                                 "filters": {"namespace": "chat/1"}})
        assert response.status_code == 200, response.content
        return [result["memory"]["id"] for result in response.json()["results"]]

    assert ids[1] in fulltext_ids("Which game have they been playing?")
    assert ids[1] not in fulltext_ids("When did they start playing the game?")
    assert ids[0] in fulltext_ids("When did they start playing the game?")
