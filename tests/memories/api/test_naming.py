"""A question asking for what goes by a name ("What books has Tim read?") weighs the memories
that name something above those that name nothing (memories.retrieval.naming): the title said
once does not drown under the turns that only talk about books. A speaker's name, a date or a
quantity names nothing of the kind; a person who speaks only in another namespace is known
there only."""

import pytest

from tests.knobs import with_search_knobs
from tests.memories.api.conversation import store

pytestmark = pytest.mark.django_db

CONVERSATION = "chats/tim-john"
TITLE = "Tim: I finished reading Dune last week, what a story"
TURNS = [
    TITLE,
    "John: What books have you read lately, Tim? I need new books to read",
    "Tim: Thanks, John! I read books every night, reading books is what I love",
    "Tim: I have read 3 books since May 2023, reading is my favourite",
    "Tim: I went hiking in the hills with my brother",
    "John: Basketball practice ran late again tonight",
]


@pytest.fixture
def conversation(api_a):
    return store(api_a, CONVERSATION, TURNS)


def search(api, query, limit=4):
    response = api.post("/api/v1/search", {"query": query, "limit": limit, "filters": {"namespace": "chats"}})
    assert response.status_code == 200, response.content
    return response.json()


def test_a_question_for_named_things_ranks_the_memory_that_names_one_first(api_a, conversation, settings):
    body = search(api_a, "What books has Tim read?")
    assert body["understood"]["asks_for"] == "books"
    assert body["results"][0]["memory"]["content"] == TITLE
    assert body["results"][0]["signals"]["names"] == {"asks_for": "books"}
    # Turned off: the turns that say "books" most come first, and nothing is read or marked.
    settings.MEMORY_PLATFORM = with_search_knobs(settings.MEMORY_PLATFORM, NAMELESS_WEIGHT=1.0)
    body = search(api_a, "What books has Tim read?")
    assert body["understood"]["asks_for"] is None
    assert body["results"][0]["memory"]["content"] != TITLE
    assert all("names" not in result["signals"] for result in body["results"])


def test_a_speakers_name_a_date_or_a_quantity_names_nothing(api_a, conversation):
    """"Thanks, John!" addresses the other speaker; "3 books since May 2023" counts and dates."""
    body = search(api_a, "Which books did Tim read?", limit=6)
    named = {result["memory"]["content"] for result in body["results"] if "names" in result["signals"]}
    assert named == {TITLE}


def test_a_question_for_what_goes_by_no_name_is_ranked_as_before(api_a, conversation, settings):
    """Hobbies are not called by names ("hiking"): nothing is weighed, so the results are those
    of the search with the preference off."""
    body = search(api_a, "What hobbies does Tim have?")
    assert body["understood"]["asks_for"] is None
    assert all("names" not in result["signals"] for result in body["results"])
    settings.MEMORY_PLATFORM = with_search_knobs(settings.MEMORY_PLATFORM, NAMELESS_WEIGHT=1.0)
    off = search(api_a, "What hobbies does Tim have?")
    assert [r["memory"]["id"] for r in off["results"]] == [r["memory"]["id"] for r in body["results"]]


def test_someone_who_speaks_only_in_another_namespace_is_named_here(api_a, conversation):
    """Oscar speaks in another user's namespace; here he is only mentioned, so the turn that
    mentions him names someone. Whether he speaks elsewhere never shows."""
    store(api_a, "users/oscar", ["Oscar: I lend my books to everyone"])
    [lent] = store(api_a, CONVERSATION, ["Tim: My friend Oscar lent me his books about dragons"])
    body = search(api_a, "Which books has Tim read?", limit=6)
    signals = {result["memory"]["id"]: result["signals"] for result in body["results"]}
    assert signals[lent]["names"] == {"asks_for": "books"}
    assert all(result["memory"]["content"].startswith(("Tim", "John")) for result in body["results"])


def test_a_reply_is_lifted_as_the_answer_only_if_it_names_something(api_a, conversation):
    """John asks "What books have you read lately, Tim?"; Tim's reply names no book, so for a
    question asking for books it is not lifted as the answer to it (memories.retrieval.
    neighbours). A reply that names one is."""
    ids = dict(zip(TURNS, conversation))
    body = search(api_a, "What books has Tim read?", limit=6)
    signals = {result["memory"]["id"]: result["signals"] for result in body["results"]}
    assert "answers" not in signals[ids[TURNS[2]]].get("neighbours", {})
    assert body["results"][0]["memory"]["content"] == TITLE

    question, reply = store(api_a, "chats/tim-anna", ["Anna: Which books did you read this summer, Tim?",
                                                      "Tim: Mostly The Hobbit, twice"])
    body = search(api_a, "What books has Tim read?", limit=10)
    signals = {result["memory"]["id"]: result["signals"] for result in body["results"]}
    assert signals[reply]["neighbours"]["answers"] is True and signals[reply]["neighbours"]["from"] == question
