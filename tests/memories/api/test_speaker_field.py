"""Who said a memory, as data (issue 34, docs/adr/0047): the write's `speaker` is linked to the
memory as its speaker, the link the search's speaker signal reads, whatever shape the text is
in; it is answered in the memory, kept or changed by an edit, recorded in the history, checked
like any field, and resolved only within the memory's namespace."""

import uuid

import numpy as np
import pytest

from memories import jobs
from memories.models import Entity, Memory, MemoryEntity
from memories.vectors.embeddings import get_embedder
from tenants.context import tenant_context

pytestmark = pytest.mark.django_db

CONVERSATION = ["chats", "caroline-melanie"]
TURNS = [
    ("Melanie", "I signed up for a pottery class yesterday, it is like therapy for me"),
    ("Caroline", "A pottery class! I love pottery, the pottery studio near me has a pottery class too"),
    ("Caroline", "Which pottery class did you sign up for? Pottery is so calming"),
    ("Melanie", "The one at the community centre, on Tuesday evenings"),  # the answer, in other words
    ("Melanie", "The kids and I went camping at the beach last weekend"),
    ("Caroline", "I went to a support group meeting on Tuesday"),
    ("Caroline", "Melanie, where is your pottery studio? Is it the pottery studio by the beach?"),
]


def write(api, content, namespace=CONVERSATION, **fields):
    response = api.post("/api/v1/memories", {"content": content, "namespace": namespace, **fields})
    assert response.status_code == 201, response.content
    return response.json()["memory"]


def roles(org, memory_id) -> dict:
    with tenant_context(org.id):
        return {link.entity.name: link.role
                for link in MemoryEntity.objects.filter(memory_id=memory_id).select_related("entity")}


def test_the_speaker_given_is_linked_as_the_speaker_and_answered(api_a, tenant_a):
    memory = write(api_a, "I went to the parade with Caroline", speaker="Melanie")
    assert memory["speaker"] == "Melanie"
    assert roles(tenant_a.org, memory["id"]) == {"Melanie": "speaker", "Caroline": "mentioned"}
    assert api_a.get(f"/api/v1/memories/{memory['id']}").json()["speaker"] == "Melanie"
    listed = api_a.get("/api/v1/memories", {"namespace": "chats"}).json()["results"]
    assert [item["speaker"] for item in listed] == ["Melanie"]
    # Without it, the text's shape still tells, and a text in no such shape has nobody.
    assert write(api_a, "Caroline said: the parade was loud")["speaker"] == "Caroline"
    assert write(api_a, "The parade was loud")["speaker"] is None


def test_the_speaker_given_overrides_the_texts_shape(api_a, tenant_a):
    memory = write(api_a, "Caroline: how was the parade?", speaker="Melanie")
    assert memory["speaker"] == "Melanie"
    assert roles(tenant_a.org, memory["id"]) == {"Melanie": "speaker", "Caroline": "mentioned"}


def test_a_batch_takes_a_speaker_per_memory(api_a, tenant_a):
    response = api_a.post("/api/v1/memories", {"memories": [
        {"content": text, "namespace": CONVERSATION, "speaker": speaker} for speaker, text in TURNS]})
    assert response.status_code == 201, response.content
    ids = [result["id"] for result in response.json()["results"]]
    assert [api_a.get(f"/api/v1/memories/{memory_id}").json()["speaker"] for memory_id in ids] == [
        speaker for speaker, _ in TURNS]
    with tenant_context(tenant_a.org.id):  # one person each, however many turns they spoke
        assert sorted(Entity.objects.filter(namespace="chats/caroline-melanie", kind="person")
                      .values_list("name", flat=True)) == ["Caroline", "Melanie"]


@pytest.mark.parametrize("shape", ["{name}: {text}", "{name} said: {text}", "[{name}] {text}",
                                   "8/5/23, 1:56 PM - {name}: {text}", '"{text}" said {name}.', None])
def test_the_speaker_signal_reads_the_link_in_every_shape(api_a, shape):
    """The question about Melanie ranks her own turns first however the turns were written
    (what she said of her class, or her answer to Caroline's question about it): Caroline's
    question repeats every word of it."""
    for name, text in TURNS:
        if shape is None:
            write(api_a, text, speaker=name, memory_type="episodic")
        else:
            write(api_a, shape.format(name=name, text=text), memory_type="episodic")
    response = api_a.post("/api/v1/search", {"query": "Where is Melanie's pottery studio?", "limit": 3,
                                             "filters": {"namespace": "chats"}})
    body = response.json()
    assert body["understood"]["speaker"]["name"] == "Melanie"
    first_two = " ".join(result["memory"]["content"] for result in body["results"][:2])
    assert TURNS[0][1] in first_two and TURNS[3][1] in first_two
    assert [result["memory"]["speaker"] for result in body["results"][:2]] == ["Melanie", "Melanie"]


def test_an_edit_keeps_changes_or_clears_the_speaker_and_history_records_it(api_a, tenant_a):
    memory = write(api_a, "Caroline: I went to the parade", speaker="Melanie")
    path = f"/api/v1/memories/{memory['id']}"
    # A new content keeps the speaker the agent named (the text's shape does not take over).
    changed = api_a.patch(path, {"content": "Caroline: I went to the parade twice", "version": 1})
    assert changed.status_code == 200, changed.content
    assert changed.json()["speaker"] == "Melanie"
    assert roles(tenant_a.org, memory["id"]) == {"Melanie": "speaker", "Caroline": "mentioned"}
    changed = api_a.patch(path, {"speaker": "Oscar", "version": 2})
    assert changed.status_code == 200, changed.content
    assert changed.json()["speaker"] == "Oscar"
    assert roles(tenant_a.org, memory["id"]) == {"Oscar": "speaker", "Caroline": "mentioned"}
    # null: nobody named, so the text's shape decides again.
    changed = api_a.patch(path, {"speaker": None, "version": 3})
    assert changed.status_code == 200, changed.content
    assert changed.json()["speaker"] == "Caroline"
    history = api_a.get(f"{path}/history").json()
    versions = history["results"] if isinstance(history, dict) else history
    assert sorted((version["version_num"], version["snapshot"]["speaker"]) for version in versions) == [
        (1, "Melanie"), (2, "Melanie"), (3, "Oscar"), (4, "Caroline")]


@pytest.mark.parametrize("speaker, problem", [
    ("", "blank"), ("   ", "blank"), ("x" * 129, "128"), (12, None), (["Melanie"], None), ("1234", "letters"),
    ("Mel\nanie", "letters"),
])
def test_a_bad_speaker_is_refused_by_field_and_stores_nothing(api_a, tenant_a, speaker, problem):
    for body in ({"content": "I went to the parade", "namespace": CONVERSATION, "speaker": speaker},
                 {"memories": [{"content": "I went to the parade", "namespace": CONVERSATION, "speaker": speaker}]}):
        response = api_a.post("/api/v1/memories", body)
        assert response.status_code == 400, response.content
        assert "speaker" in str(response.json()), response.content
        if problem:
            assert problem in str(response.json()).lower(), response.content
    with tenant_context(tenant_a.org.id):
        assert not Entity.objects.filter(namespace="chats/caroline-melanie").exists()
    memory = write(api_a, "I went to the parade")
    response = api_a.patch(f"/api/v1/memories/{memory['id']}", {"speaker": "", "version": 1})
    assert response.status_code == 400 and "speaker" in str(response.json()), response.content
    assert api_a.get(f"/api/v1/memories/{memory['id']}").json()["version"] == 1


def test_the_speaker_resolves_within_the_namespace_only(api_a, api_b, tenant_a, tenant_b):
    write(api_a, "I love pottery", namespace=["users", "alice"], speaker="Melanie")
    write(api_a, "I love hiking", namespace=["users", "bob"], speaker="Mel")
    write(api_b, "I love chess", namespace=["users", "alice"], speaker="Mel")
    with tenant_context(tenant_a.org.id):
        people = sorted(Entity.objects.filter(kind="person", namespace__startswith="users/")
                        .values_list("namespace", "name"))
    # Bob's "Mel" is not Alice's Melanie, nor is the other organisation's.
    assert people == [("users/alice", "Melanie"), ("users/bob", "Mel")]
    with tenant_context(tenant_b.org.id):
        assert list(Entity.objects.filter(kind="person", namespace="users/alice").values_list("name", flat=True)) \
            == ["Mel"]
    # A search in Bob's namespace does not know Alice's Melanie as a speaker.
    body = api_a.post("/api/v1/search", {"query": "What does Melanie love?",
                                         "filters": {"namespace": "users/bob"}}).json()
    assert body["understood"]["speaker"] is None


def test_a_short_name_as_speaker_is_the_known_person(api_a, tenant_a):
    write(api_a, "Melanie: the kids loved the beach")
    memory = write(api_a, "I love the beach too", speaker="Mel")
    assert memory["speaker"] == "Melanie"
    assert roles(tenant_a.org, memory["id"]) == {"Melanie": "speaker"}


def test_a_correction_keeps_the_speaker_named_unless_it_names_another(api_a, tenant_a):
    memory = write(api_a, "I have two kids", speaker="Melanie")
    corrected = api_a.post(f"/api/v1/memories/{memory['id']}/supersede", {"content": "I have three kids"})
    assert corrected.status_code == 201, corrected.content
    assert corrected.json()["memory"]["speaker"] == "Melanie"
    again = api_a.post(f"/api/v1/memories/{corrected.json()['memory']['id']}/supersede",
                       {"content": "She has three kids", "speaker": None})
    assert again.status_code == 201, again.content
    assert again.json()["memory"]["speaker"] is None


def test_an_archived_memory_s_speaker_changes_and_survives_unarchiving(api_a, tenant_a):
    from memories.access import Actor
    from memories.writes.change import memory_archive, memory_unarchive

    memory = write(api_a, "I went to the parade", speaker="Melanie")
    path = f"/api/v1/memories/{memory['id']}"
    actor = Actor(agent_id=tenant_a.agent.pk)
    with tenant_context(tenant_a.org.id):
        memory_archive(org_id=tenant_a.org.id, memory_id=memory["id"], actor=actor)
    changed = api_a.patch(path, {"speaker": "Oscar", "version": 2})
    assert changed.status_code == 200, changed.content
    assert changed.json()["speaker"] == "Oscar" and changed.json()["status"] == "archived"
    with tenant_context(tenant_a.org.id):
        memory_unarchive(org_id=tenant_a.org.id, memory_id=memory["id"], actor=actor)
    assert api_a.get(path).json()["speaker"] == "Oscar"
    assert roles(tenant_a.org, memory["id"]) == {"Oscar": "speaker"}


def test_what_a_line_says_has_one_vector_whatever_shape_the_transcript_wrote_it_in(api_a, tenant_a):
    """The vector is made of "Name: words" (docs/adr/0065): a chat export's time stamp or prose's
    quotation marks change nothing of what the line means. The content stays as written."""
    shapes = ["Melanie: I went camping with the kids", "5/8/23, 1:56 PM - Melanie: I went camping with the kids",
              '"I went camping with the kids," said Melanie.', "[13:56] **Melanie**: I went camping with the kids"]
    written = [write(api_a, text, namespace=["one", str(i)]) for i, text in enumerate(shapes)]  # embedded as written
    assert [memory["content"] for memory in written] == shapes
    batch = api_a.post("/api/v1/memories", {"memories": [  # embedded by the job
        {"content": text, "namespace": ["batch", str(i)]} for i, text in enumerate(shapes)]})
    assert batch.status_code == 201, batch.content
    batched = [result["id"] for result in batch.json()["results"]]
    jobs.embed_memories(org_id=str(tenant_a.org.id), memory_ids=batched)
    with tenant_context(tenant_a.org.id):
        stored = dict(Memory.objects.filter(pk__in=[m["id"] for m in written] + batched)
                      .values_list("pk", "embedding"))
    vectors = np.array([stored[uuid.UUID(str(memory_id))] for memory_id in [m["id"] for m in written] + batched])
    assert (vectors @ vectors[0]).min() > 0.99999
    # What the same words say without a speaker's line is another text, and another vector.
    plain = np.array(get_embedder().embed([shapes[1]])[0])
    assert plain @ vectors[0] < 0.99
