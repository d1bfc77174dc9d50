"""A question about one person weighs that person's own words above the others'
(memories.retrieval.speakers): the other speaker's replies about the same thing do not crowd
out the answer. The person is read from the query and resolved only among the people who
speak in the namespaces the search may see."""

import pytest
from rest_framework.test import APIClient

from tests import factories
from tests.knobs import with_search_knobs

pytestmark = pytest.mark.django_db

CONVERSATION = ["chats", "caroline-melanie"]
TURNS = [
    "Melanie: I signed up for a pottery class yesterday, it is like therapy for me",
    "Caroline: A pottery class! I love pottery, the pottery studio near me has a pottery class too",
    "Caroline: Which pottery class did you sign up for? Pottery is so calming",
    "Melanie: The one at the community centre, on Tuesday evenings",  # the answer, in other words
    "Melanie: The kids and I went camping at the beach last weekend",
    "Caroline: I went to a support group meeting on Tuesday",
    "Melanie: I finished reading Charlotte's Web again with the kids",
    "Caroline: My grandma gave me a necklace from Sweden",
    "Melanie: I ran farther than ever this morning to clear my head",
    "Caroline: Melanie, where is your pottery studio? Is it the pottery studio by the beach?",
]


def write(api, content, namespace=CONVERSATION):
    response = api.post("/api/v1/memories", {"content": content, "namespace": namespace,
                                             "memory_type": "episodic"})
    assert response.status_code == 201, response.content
    return response.json()["memory"]["id"]


@pytest.fixture
def conversation(api_a):
    return {turn: write(api_a, turn) for turn in TURNS}


def search(api, query, **body):
    response = api.post("/api/v1/search", {"query": query, "limit": 3, "filters": {"namespace": "chats"}, **body})
    assert response.status_code == 200, response.content
    return response.json()


def speakers_of(body) -> list[str]:
    return [result["memory"]["content"].split(":")[0] for result in body["results"]]


def test_a_question_about_one_person_ranks_their_own_words_first(api_a, conversation, settings):
    """Caroline asked the very question; Melanie's own turns are the ones about her: what she
    said of her class, and her answer to Caroline's question about it (which holds the
    question's words for full text, docs/adr/0070)."""
    body = search(api_a, "Where is Melanie's pottery studio?")
    assert body["understood"]["speaker"]["name"] == "Melanie"
    assert {result["memory"]["content"] for result in body["results"][:2]} == {TURNS[0], TURNS[3]}
    assert body["results"][0]["signals"]["speaker"] == {"name": "Melanie"}
    assert all("speaker" not in r["signals"] for r in body["results"] if r["memory"]["content"].startswith("Caroline"))
    # Without the preference, Caroline's question ranks above Melanie's own words.
    settings.MEMORY_PLATFORM = with_search_knobs(settings.MEMORY_PLATFORM, SPEAKER_OTHERS_WEIGHT=1.0)
    body = search(api_a, "Where is Melanie's pottery studio?", limit=len(TURNS))
    assert body["understood"]["speaker"] is None
    ranked = [result["memory"]["content"] for result in body["results"]]
    assert ranked.index(TURNS[-1]) < ranked.index(TURNS[0])
    assert all("speaker" not in result["signals"] for result in body["results"])


def test_a_short_name_the_conversation_used_finds_the_person(api_a, conversation):
    write(api_a, "Caroline: Mel, your bowl looks amazing")  # "Mel" is learnt as Melanie's
    body = search(api_a, "What did Mel sign up for?")
    assert body["understood"]["speaker"]["name"] == "Mel"
    assert speakers_of(body)[0] == "Melanie"


def test_a_question_about_two_people_or_nobody_known_has_no_focus(api_a, conversation):
    assert search(api_a, "What did Caroline and Melanie talk about pottery?")["understood"]["speaker"] is None
    assert search(api_a, "What do Melanie's and Caroline's kids like?")["understood"]["speaker"] is None
    assert search(api_a, "What did Oscar sign up for?")["understood"]["speaker"] is None
    assert search(api_a, "what did she sign up for?")["understood"]["speaker"] is None


def test_of_two_people_named_the_first_is_who_the_question_is_about(api_a, conversation):
    """"What book did Caroline recommend to Melanie?": Caroline did the recommending, in her own
    words; Melanie's turn says both the book and Caroline's name, and no longer outranks it."""
    answer = write(api_a, "Caroline: I recommend Becoming Nicole, the best book I have read")
    write(api_a, "Melanie: Caroline, that book about the trans girl and her family was so moving")
    body = search(api_a, "What book did Caroline recommend to Melanie?")
    assert body["understood"]["speaker"]["name"] == "Caroline"
    assert body["results"][0]["memory"]["id"] == answer
    assert body["results"][0]["signals"]["speaker"] == {"name": "Caroline"}
    assert search(api_a, "What did Melanie ask Caroline about pottery?")["understood"]["speaker"]["name"] == "Melanie"


def test_the_names_of_two_people_leave_what_full_text_matches(api_a, conversation):
    """Each speaker's name is in every one of their turns and in the other's words to them:
    "What do Caroline and Melanie knit?" shares no other word with any turn. Asked what they
    did together, the names stay: what two people do together is told where they talk to each
    other by name."""
    assert "fulltext" not in search(api_a, "What do Caroline and Melanie knit?")["understood"]["signals"]
    assert "fulltext" not in search(api_a, "What did Caroline knit for Melanie?")["understood"]["signals"]
    together = search(api_a, "What did Caroline and Melanie knit together?")
    assert "fulltext" in together["understood"]["signals"]
    assert together["understood"]["speaker"] is None


def test_the_others_words_still_come_after_the_persons_own(api_a, conversation):
    """A preference, not a filter: Oscar said one thing; the rest of the results are the others'."""
    write(api_a, "Oscar: I joined the pottery class with Melanie")
    body = search(api_a, "What class did Oscar join?", limit=5)
    assert body["understood"]["speaker"]["name"] == "Oscar"
    assert speakers_of(body)[0] == "Oscar" and len(body["results"]) == 5
    assert [r["signals"].get("speaker") for r in body["results"]][:2] == [{"name": "Oscar"}, None]


def test_whether_someone_speaks_in_another_namespace_never_shows(api_a, tenant_a, conversation):
    """Oscar speaks only in another user's namespace: a search of this conversation, or by a
    key limited to it, does not know him (nor filters by him)."""
    for i in range(5):
        write(api_a, f"Oscar: pottery class note {i}", namespace=["users", "oscar"])
    assert search(api_a, "What class did Oscar join?")["understood"]["speaker"] is None
    _, key = factories.api_key(agent=tenant_a.agent, namespaces=["chats"])
    limited = APIClient()
    limited.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    body = limited.post("/api/v1/search", {"query": "What class did Oscar join?", "limit": 3}).json()
    assert body["understood"]["speaker"] is None
    assert all(not r["memory"]["content"].startswith("Oscar") for r in body["results"])
    # Searched where he speaks, he is known.
    assert search(api_a, "What class did Oscar join?", filters={"namespace": "users/oscar"})["understood"]["speaker"]


def test_full_text_matches_the_rest_of_the_question_not_the_name(api_a, conversation, settings):
    """Every one of Melanie's turns says "Melanie": matching the name would rank whatever turn
    repeats it. No turn speaks of knitting, so full text finds nothing; the name alone still
    matches when it is all the query says."""
    body = search(api_a, "What does Melanie knit?")
    assert body["understood"]["speaker"]["name"] == "Melanie"
    assert "fulltext" not in body["understood"]["signals"]
    assert "fulltext" in search(api_a, "Melanie?")["understood"]["signals"]
    settings.MEMORY_PLATFORM = with_search_knobs(settings.MEMORY_PLATFORM, SPEAKER_OTHERS_WEIGHT=1.0)
    assert "fulltext" in search(api_a, "What does Melanie knit?")["understood"]["signals"]
