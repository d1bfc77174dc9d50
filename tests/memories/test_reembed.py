"""Re-embedding without downtime (memories.lifecycle.reembed, `manage.py reembed`): another
model's vectors are built beside the active model's while searches answer from those, a switch
swaps every memory's vector in one transaction, a rollback restores the previous vectors
exactly, and what is written after a switch is embedded by the new model. Real model (the
float32 all-MiniLM-L6-v2 and its int8 quantized graph), real PostgreSQL and Redis."""

import io

import django_rq
import numpy as np
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import ProgrammingError, connection, connections, transaction
from django.utils import timezone

from memories import jobs
from memories.errors import Conflict
from memories.caching import cache
from memories.lifecycle import erasure, reembed
from memories.models import EmbeddingModel, Memory, MemoryEmbedding
from memories.vectors import embeddings
from tenants.context import service_account, tenant_context
from tests import factories
from tests.markers import committing

pytestmark = pytest.mark.django_db

FLOAT32, INT8 = embeddings.MODEL_NAME, embeddings.INT8_MODEL_NAME
FACTS = [
    "The user drinks green tea every morning",
    "The user is allergic to peanuts and shellfish",
    "Production deploys happen on Thursdays after the stand-up",
    "The user moved to Lisbon last spring",
    "The quarterly budget review is due in March",
]
QUESTION = "What does the user drink in the morning?"


@pytest.fixture(autouse=True)
def no_settling(monkeypatch):
    """A switch waits for every process to read that it began (the active model's cache);
    here the only process is this one, which reads it at once."""
    monkeypatch.setattr(reembed, "SETTLE_SECONDS", 0)


def command(*args) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command("reembed", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def serving() -> dict[str, tuple[str, np.ndarray | None]]:
    """Every memory's own vector and its model, of every organisation."""
    with service_account():
        return {str(pk): (model, None if vector is None else np.array(vector, dtype=np.float32))
                for pk, vector, model in Memory.objects.without_usage().values_list("pk", "embedding",
                                                                                   "embedding_model")}


def kept(model: str) -> dict[str, np.ndarray]:
    """The vectors memory_embeddings holds of `model`, by memory."""
    with service_account():
        return {str(memory): np.array(vector, dtype=np.float32)
                for memory, vector in MemoryEmbedding.objects.filter(model=model).values_list("memory_id", "embedding")}


def state(model: str) -> EmbeddingModel | None:
    return EmbeddingModel.objects.filter(name=model).first()


def memory_ids() -> set[str]:
    with service_account():
        return {str(pk) for pk in Memory.objects.without_usage().values_list("pk", flat=True)}


def same(left: dict, right: dict) -> bool:
    return left.keys() == right.keys() and all(np.array_equal(left[k], right[k]) for k in left)


@pytest.fixture
def written(tenant_a, tenant_b, api_a, api_b):
    """The facts, written through the API into both organisations (beside the fixtures' rows),
    with the default model active as the migration leaves it (a committing test before this
    one emptied every table, its row too)."""
    with service_account():
        if not EmbeddingModel.objects.filter(state="active").exists():
            EmbeddingModel.objects.create(name=FLOAT32, state="active", activated_at=timezone.now())
    embeddings.forget_active_model()
    ids = {}
    for org, api in ((tenant_a.org, api_a), (tenant_b.org, api_b)):
        ids[org.id] = [api.post("/api/v1/memories", {"content": fact}).json()["memory"]["id"] for fact in FACTS]
    return ids


def search(api, query: str = QUESTION) -> list[tuple[str, float]]:
    response = api.post("/api/v1/search", {"query": query, "limit": 3, "mode": "vector"})
    assert response.status_code == 200, response.content
    return [(result["memory"]["id"], result["signals"]["vector"]["similarity"])
            for result in response.json()["results"]]


def cosine(query: np.ndarray, vector: np.ndarray) -> float:
    return float(query @ vector / np.linalg.norm(query) / np.linalg.norm(vector))


# --------------------------------------------------------------------------- building


def test_a_build_embeds_every_memory_of_every_organisation_with_progress(written):
    before = serving()
    out, err = command("--model", INT8)

    vectors = kept(INT8)
    assert set(vectors) == memory_ids() and len(vectors) == 2 * (len(FACTS) + 2)  # both organisations, all
    assert f"embedding with {INT8}" in err and f"{len(vectors)}/{len(vectors)}" in err  # the progress bar
    assert f"embedded {len(vectors)} memories; {len(vectors)} of {len(vectors)} have a vector of it" in out
    with service_account():
        rows = list(MemoryEmbedding.objects.filter(model=INT8).values_list("memory__content", "embedding",
                                                                           "text_hash", "dimensions"))
    int8 = embeddings.embedder_for(INT8)
    for content, vector, digest, dimensions in rows:
        assert dimensions == 384 and digest == embeddings.text_hash(content)
        assert cosine(np.array(int8.embed([content])[0]), np.array(vector)) > 0.97  # int8 varies with its batch
    row = state(INT8)
    assert (row.state, row.memories_done, row.memories_total, row.task) == ("ready", len(vectors), len(vectors), "")
    assert row.finished_at is not None
    # Searches still hold, and compare with, the active model's vectors: nothing of them moved.
    assert embeddings.active_model() == FLOAT32
    assert same({k: v for k, (_, v) in serving().items()}, {k: v for k, (_, v) in before.items()})


def test_a_build_embeds_a_transcript_line_as_its_speaker_and_words(written, api_a):
    """As the write does (docs/adr/0065): the vector of "[13:56] **Melanie**: ..." is the one of
    "Melanie: ...", not of the time stamp and markup around the name."""
    line = "[13:56] **Melanie**: I went camping with the kids"
    memory_id = api_a.post("/api/v1/memories", {"content": line}).json()["memory"]["id"]
    command("--model", INT8)
    int8 = embeddings.embedder_for(INT8)
    said, as_written = int8.embed(["Melanie: I went camping with the kids", line])
    vector = kept(INT8)[memory_id]
    # int8's kernels differ by processor (cosine of the two texts 0.59 in float32, 0.81 in int8
    # on a processor without VNNI): the vector is the one of "Name: words", well apart from the other.
    assert cosine(np.array(said), vector) > 0.97
    assert cosine(np.array(as_written), vector) < cosine(np.array(said), vector) - 0.1


def test_a_build_goes_on_where_it_stopped_and_embeds_only_what_changed(written, tenant_a, api_a):
    first = reembed.build(model=INT8, seconds=1e-9)  # stopped at once, before its first batch
    assert not first.finished and state(INT8).state == "building"
    assert reembed.build(model=INT8).embedded == len(memory_ids())
    changed = written[tenant_a.org.id][0]
    assert api_a.patch(f"/api/v1/memories/{changed}", {"content": "The user drinks black coffee now"},
                       HTTP_IF_MATCH='"1"').status_code == 200
    added = api_a.post("/api/v1/memories", {"content": "The user plays chess on Sundays"}).json()["memory"]["id"]

    again = reembed.build(model=INT8)

    assert (again.embedded, again.finished, again.done, again.total) == (2, True, len(memory_ids()), len(memory_ids()))
    with service_account():
        digest = MemoryEmbedding.objects.get(model=INT8, memory_id=changed).text_hash
    assert digest == embeddings.text_hash("The user drinks black coffee now") and added in kept(INT8)


def test_a_build_walks_the_organisations_in_order_a_batch_at_a_time(written, monkeypatch):
    """A batch reads one organisation after another (a router statement each on a cluster) and
    may end inside one: where it ends is where the next starts, so every memory is embedded
    exactly once, whichever batch it falls in."""
    monkeypatch.setattr(reembed, "BATCH", 3)  # each organisation has 7 memories: batches cross them
    embedder, at, sizes = embeddings.embedder_for(INT8), reembed.START, []
    while at is not None:
        embedded, at = reembed._embed_batch(embedder, INT8, at)
        sizes.append(embedded)
    assert max(sizes) == 3 and sum(sizes) == len(memory_ids()) and set(kept(INT8)) == memory_ids()
    assert reembed.build(model=INT8).embedded == 0


def test_searches_answer_from_the_active_model_while_a_build_runs(written, tenant_a, api_a, monkeypatch):
    monkeypatch.setattr(reembed, "BATCH", 2)
    float32 = np.array(embeddings.embedder_for(FLOAT32).embed([QUESTION])[0])
    served = serving()
    during = []
    reembed.build(model=INT8, progress=lambda done, total: during.append((done, total, search(api_a))))

    assert len(during) > 3 and during[-1][0] == during[-1][1]
    for done, total, results in during:
        assert results[0][0] == written[tenant_a.org.id][0]  # the tea, found by meaning
        for memory_id, similarity in results:
            assert similarity == pytest.approx(cosine(float32, served[memory_id][1]), abs=1e-5)
    assert cache.query_key(QUESTION) == cache.query_key(QUESTION, FLOAT32)


def test_an_unknown_model_is_refused_and_nothing_changes(written):
    for option in ("--model", "--activate", "--drop"):
        with pytest.raises(CommandError, match=f"unknown embedding model 'nope'; known: {FLOAT32}, {INT8}"
                           if option != "--drop" else "nope has no vectors here to drop"):
            command(option, "nope")
    with pytest.raises(CommandError, match="--threads must be 0"):
        command("--model", INT8, "--threads", "-1")
    assert not EmbeddingModel.objects.exclude(name=FLOAT32).exists() and not kept("nope") and not kept(INT8)


def test_the_active_model_is_not_built_again():
    with pytest.raises(CommandError, match=f"{FLOAT32} is the active model: memories hold its vectors already"):
        command("--model", FLOAT32)


def test_a_model_of_other_dimensions_is_refused():
    with pytest.raises(ValueError, match="big makes 768-dimensional vectors; memories hold 384"):
        embeddings.KnownModel("big", 768, lambda threads: None, about="a larger model")


@pytest.mark.django_db(databases=["default", "owner"])
def test_one_re_embedding_at_a_time(written):
    """Another process holding the lock (the owner's connection is another session)."""
    with connections["owner"].cursor() as other:
        other.execute("SELECT pg_advisory_lock(%s)", [reembed.LOCK])
        try:
            with pytest.raises(CommandError, match="another re-embedding is running"):
                command("--model", INT8)
            assert reembed.lock_held()
        finally:
            other.execute("SELECT pg_advisory_unlock(%s)", [reembed.LOCK])
    assert not reembed.lock_held()


# --------------------------------------------------------------------------- switching


def test_activating_a_model_never_built_or_half_built_is_refused(written):
    with pytest.raises(CommandError, match=f"{INT8} was never built here: build it first "
                                           rf"\(manage.py reembed --model {INT8}\)"):
        command("--activate", INT8)
    reembed.build(model=INT8, seconds=1e-9)
    with pytest.raises(CommandError, match=rf"{INT8}'s build has not finished \(0 of 14 memories\)"):
        command("--activate", INT8)
    with pytest.raises(CommandError, match=f"{FLOAT32} is the active model already"):
        command("--activate", FLOAT32)
    with pytest.raises(CommandError, match=f"nothing to roll back to: no model was active before {FLOAT32}"):
        command("--rollback")
    assert embeddings.active_model() == FLOAT32 and state(FLOAT32).state == "active"


def test_a_switch_swaps_every_vector_at_once_and_searches_follow(written, tenant_a, api_a):
    reembed.build(model=INT8)
    before, built = serving(), kept(INT8)
    with service_account():
        updated = dict(Memory.objects.without_usage().values_list("pk", "updated_at"))

    out, _ = command("--activate", INT8)

    after = serving()
    assert {model for model, _ in after.values()} == {INT8}
    assert same({k: v for k, (_, v) in after.items()}, built)  # the very vectors built
    assert same(kept(FLOAT32), {k: v for k, (_, v) in before.items()})  # the previous ones, kept
    assert kept(INT8) == {}  # the active model's vectors are the memories' own
    assert (state(INT8).state, state(INT8).replaced, state(FLOAT32).state) == ("active", FLOAT32, "retired")
    assert f"{INT8} is the active model (was {FLOAT32})" in out and "moved 14 memories" in out
    with service_account():  # a new vector is no change of the memory
        assert dict(Memory.objects.without_usage().values_list("pk", "updated_at")) == updated
    # Searches embed the query with the new model, cache it under its name, and compare it
    # with the new vectors.
    assert embeddings.active_model() == INT8 and embeddings.get_embedder().model_name == INT8
    query = np.array(embeddings.embedder_for(INT8).embed([QUESTION])[0])
    results = search(api_a)
    assert results[0][0] == written[tenant_a.org.id][0]
    for memory_id, similarity in results:
        assert similarity == pytest.approx(cosine(query, built[memory_id]), abs=1e-5)
    assert cache.query_key(QUESTION) == cache.query_key(QUESTION, INT8) != cache.query_key(QUESTION, FLOAT32)
    assert cache.query_embedding(QUESTION) == pytest.approx(list(query), abs=1e-6)


@committing
def test_other_sessions_see_the_active_model_flip_only_when_the_switch_ends(written):
    """The vectors move a batch at a time, each batch committed; another session (here the
    owner's connection) reads the previous model as the active one until the flip commits."""
    reembed.build(model=INT8)

    def active() -> str:
        with service_account(using="owner"), connections["owner"].cursor() as cursor:
            # As memories.vectors.embeddings.active_model reads it (an earlier committing test's flush
            # empties embedding_models: the default model is active then).
            cursor.execute("SELECT coalesce((SELECT name FROM embedding_models WHERE state = 'active'), %s)",
                           [FLOAT32])
            return cursor.fetchone()[0]

    reembed._record(INT8, state="switching")
    moved = reembed._move(INT8, progress=None)
    assert moved.switched == len(memory_ids()) and active() == FLOAT32  # committed, and still the previous
    reembed._flip(INT8)
    assert active() == INT8
    django_rq.get_queue(jobs.QUEUE).empty()  # the sweep the commit queued: nothing is pending here


# --------------------------------------------------------------------------- during a switch


@pytest.fixture
def half_switched(written, tenant_a, monkeypatch):
    """A switch to the int8 model stopped after its first batch of tenant A's memories (3 of
    them): the state a search meets while the switch runs. Returns the memories' float32
    vectors before it began."""
    monkeypatch.setattr(reembed, "MOVE_BATCH", 3)
    before = {k: v for k, (_, v) in serving().items()}
    reembed.build(model=INT8)
    reembed._record(INT8, state="switching")
    embeddings.forget_active_model()
    assert reembed._move_batch(INT8, str(tenant_a.org.id), reembed.START[1])[0] == 3
    assert {model for model, _ in serving().values()} == {FLOAT32, INT8}  # memories.embedding is a mix
    return before


def test_searches_compare_with_one_model_throughout_a_switch(half_switched, tenant_a, api_a, tenant_b, api_b):
    assert embeddings.active_standing() == (FLOAT32, INT8)
    for tenant, api in ((tenant_a, api_a), (tenant_b, api_b)):
        for query in (QUESTION, "peanut allergy", "when do deploys happen"):
            results = search(api, query)
            assert results
            vector = np.array(embeddings.embedder_for(FLOAT32).embed([query])[0])
            for memory_id, similarity in results:
                # The float32 vector of every memory, moved or not: one model's ranking.
                assert similarity == pytest.approx(cosine(vector, half_switched[memory_id]), abs=1e-5)
                assert memory_id in {str(pk) for pk in _ids_of(tenant)}  # its own organisation's only
    assert search(api_a)[0][0] == written_first(tenant_a)


def _ids_of(tenant):
    with tenant_context(tenant.org.id):
        return Memory.objects.without_usage().values_list("pk", flat=True)


def written_first(tenant) -> str:
    with tenant_context(tenant.org.id):
        return str(Memory.objects.without_usage().get(content=FACTS[0]).pk)


def test_a_switch_stopped_midway_is_finished_by_activating_again(half_switched, tenant_a, api_a):
    with pytest.raises(Conflict, match="activate it again to finish it"):
        reembed.build(model=INT8)
    switched = reembed.activate(model=INT8)
    assert switched.embedded == 0 and switched.pending == 0
    assert switched.switched == len(memory_ids()) - 3  # the rest; the first 3 had moved
    assert {model for model, _ in serving().values()} == {INT8}
    assert same(kept(FLOAT32), half_switched) and kept(INT8) == {}
    assert embeddings.active_standing() == (INT8, "")


def test_edits_during_a_switch_end_with_the_new_models_vector_of_their_text(half_switched, tenant_a, api_a):
    """An edit while vectors move is embedded by the active (previous) model, which searches
    still compare with; the switch then gives it the new model's vector of its new text,
    whether its memory had moved already or not."""
    ids = list(half_switched)
    with service_account():
        moved = [str(pk) for pk in Memory.objects.without_usage().filter(embedding_model=INT8).values_list("pk", flat=True)]
        unmoved = [str(pk) for pk in Memory.objects.without_usage().filter(
            org_id=tenant_a.org.id, embedding_model=FLOAT32, content__in=FACTS).values_list("pk", flat=True)]
    edits = {moved[0]: "The user now drinks rooibos at night", unmoved[0]: "The user moved to Porto in autumn"}
    for memory_id, text in edits.items():
        response = api_a.patch(f"/api/v1/memories/{memory_id}", {"content": text}, HTTP_IF_MATCH='"1"')
        assert response.status_code == 200, response.content
    now = serving()
    float32, int8 = embeddings.embedder_for(FLOAT32), embeddings.embedder_for(INT8)
    for memory_id, text in edits.items():  # the active model's vector of the new text, meanwhile
        assert now[memory_id][0] == FLOAT32
        assert np.allclose(now[memory_id][1], float32.embed([text])[0], atol=1e-6)
    query = np.array(float32.embed(["What does the user drink at night?"])[0])
    top = search(api_a, "What does the user drink at night?")
    assert top[0][0] == moved[0] and top[0][1] == pytest.approx(cosine(query, now[moved[0]][1]), abs=1e-5)

    switched = reembed.activate(model=INT8)

    assert switched.embedded == 2 and switched.pending == 0
    after = serving()
    assert {model for model, _ in after.values()} == {INT8} and after.keys() == set(ids)
    for memory_id, text in edits.items():
        assert cosine(after[memory_id][1], np.array(int8.embed([text])[0])) > 0.97  # int8 varies with its batch
        assert np.allclose(kept(FLOAT32)[memory_id], float32.embed([text])[0], atol=1e-6)  # kept: the rollback's


def test_the_embedding_sweep_leaves_the_moved_vectors_alone_during_a_switch(half_switched):
    assert jobs.embed_pending() == 0
    assert sum(model == INT8 for model, _ in serving().values()) == 3


def test_a_memory_changed_as_the_switch_flips_waits_for_the_sweep(written, tenant_a):
    """What changed after the last pass (here: its text, as a write racing the flip would) has
    no current vector of the new model: it is left pending, never given a stale one."""
    reembed.build(model=INT8)
    changed = written[tenant_a.org.id][2]
    with service_account():
        Memory.objects.filter(pk=changed).update(content="Deploys moved to Tuesdays")
    reembed._record(INT8, state="switching")
    moved = reembed._move(INT8, progress=None)
    switched = reembed._flip(INT8)
    assert moved.switched == len(memory_ids()) - 1
    assert switched.pending == 1 and serving()[changed] == ("", None)
    assert jobs.embed_pending() == 1 and serving()[changed][0] == INT8


def test_a_rollback_restores_the_previous_vectors_exactly(written, api_a):
    before = serving()
    ranking = search(api_a)
    reembed.build(model=INT8)
    built = kept(INT8)
    reembed.activate(model=INT8)

    out, _ = command("--rollback")

    assert serving().keys() == before.keys()
    assert all(model == FLOAT32 and np.array_equal(vector, before[k][1]) for k, (model, vector) in serving().items())
    assert same(kept(INT8), built) and kept(FLOAT32) == {}  # and the new model's, kept for the next switch
    assert (state(FLOAT32).state, state(FLOAT32).replaced, state(INT8).state) == ("active", INT8, "retired")
    assert f"{FLOAT32} is the active model (was {INT8}): embedded 0 to catch up" in out
    assert embeddings.active_model() == FLOAT32
    assert search(api_a) == ranking  # the very ranking, similarities and all


def test_memories_written_after_a_switch_are_embedded_by_the_new_model(written, tenant_a, api_a):
    reembed.build(model=INT8)
    reembed.activate(model=INT8)
    int8 = embeddings.embedder_for(INT8)

    one = api_a.post("/api/v1/memories", {"content": "The user keeps bees"}).json()["memory"]
    batch = [r["id"] for r in api_a.post("/api/v1/memories", {"memories": [
        {"content": "The user sails in July"}, {"content": "The user learns Greek"}]}).json()["results"]]
    assert one["embedding_model"] == INT8
    assert jobs.embed_pending() == 2  # the batch, by the sweep (a worker would run its job)
    now = serving()
    assert np.allclose(now[one["id"]][1], int8.embed(["The user keeps bees"])[0], atol=1e-6)
    assert {now[memory_id][0] for memory_id in batch} == {INT8}


def test_a_memory_changed_after_its_vector_was_built_is_embedded_again_at_the_switch(written, tenant_a, api_a):
    reembed.build(model=INT8)
    changed = written[tenant_a.org.id][1]
    with tenant_context(tenant_a.org.id):
        written_at = Memory.objects.without_usage().get(pk=changed).updated_at
    api_a.patch(f"/api/v1/memories/{changed}", {"content": "The user is allergic to cats"}, HTTP_IF_MATCH='"1"')
    with tenant_context(tenant_a.org.id):
        assert Memory.objects.without_usage().get(pk=changed).updated_at > written_at  # a change, and its vector

    switched = reembed.activate(model=INT8)

    assert switched.embedded == 1 and switched.pending == 0
    model, vector = serving()[changed]
    assert model == INT8
    assert np.allclose(vector, embeddings.embedder_for(INT8).embed(["The user is allergic to cats"])[0], atol=1e-6)


def test_a_vector_of_the_previous_model_written_after_the_switch_is_embedded_again(written, tenant_a):
    """A write that embedded with the previous model and committed after the switch (it was
    under way, or its process had not read the switch yet) is found by its model's index."""
    reembed.build(model=INT8)
    reembed.activate(model=INT8)
    late = factories.memory(org=tenant_a.org, agent=tenant_a.agent, content="Written across the switch")
    # Deleted since, too: restored later, it must not come back with a vector searches cannot compare.
    gone = factories.memory(org=tenant_a.org, agent=tenant_a.agent, content="Written across the switch, deleted")
    with tenant_context(tenant_a.org.id):
        Memory.objects.filter(pk=gone.pk).update(deleted_at=timezone.now())
    assert serving()[str(late.pk)][0] == FLOAT32
    with service_account():
        assert Memory.objects.get(pk=gone.pk).embedding_model == FLOAT32

    assert jobs.embed_pending() == 2
    model, vector = serving()[str(late.pk)]
    # Embedded in one batch with the other (the int8 model's vectors depend on the batch's padding).
    expected = embeddings.embedder_for(INT8).embed([late.content, gone.content])[0]
    assert model == INT8 and np.allclose(vector, expected, atol=1e-6)
    with service_account():
        assert Memory.objects.get(pk=gone.pk).embedding_model == INT8
    assert jobs.embed_pending() == 0
    # Last: on a Citus cluster, once a transaction has run an EXPLAIN, it reads the reference
    # tables over a connection to the coordinator, which Citus refuses after reading them locally.
    with service_account(), connection.cursor() as cursor:
        # A table this small is read whole otherwise. On a cluster, every shard's plan: Citus shows
        # one shard's, whose few rows may as well tip it to another index.
        cursor.execute("SET LOCAL enable_seqscan = off; SET LOCAL citus.explain_all_tasks = on")
        assert "memories_vector_model" in Memory.objects.filter(jobs.of_another_model(INT8)).values("pk").explain()
        # The switch's last step asks the same of every memory, deleted ones too: by the index, not
        # a scan of the table (0.7-2.2 s at 1M memories, the rows it changes locked meanwhile).
        cursor.execute(f"EXPLAIN SELECT m.id FROM memories m WHERE {reembed.OF_ANOTHER_MODEL}", [INT8, INT8])
        assert "memories_vector_model" in "\n".join(line for line, in cursor.fetchall())


def test_dropping_a_kept_model_frees_its_vectors_and_it_needs_a_build_again(written):
    reembed.build(model=INT8)
    reembed.activate(model=INT8)
    with pytest.raises(CommandError, match=f"{INT8} is the active model: switch to another first"):
        command("--drop", INT8)
    out, _ = command("--drop", FLOAT32)
    assert out.strip() == f"dropped 14 vectors of {FLOAT32}." and kept(FLOAT32) == {} and state(FLOAT32) is None
    with pytest.raises(CommandError, match=f"{FLOAT32} was never built here"):
        command("--rollback")


def test_the_listing_says_where_each_model_stands(written):
    reembed.build(model=INT8)
    out, _ = command()
    assert f"{FLOAT32}: active\n" in out and f"{INT8}: ready, 14 of 14 memories\n" in out


# --------------------------------------------------------------------------- tenants and erasure


def test_an_organisation_sees_none_of_anothers_vectors(written, tenant_a, tenant_b):
    reembed.build(model=INT8)
    with tenant_context(tenant_b.org.id):
        assert not MemoryEmbedding.objects.filter(org_id=tenant_a.org.id).exists()
        assert set(MemoryEmbedding.objects.values_list("org_id", flat=True)) == {tenant_b.org.id}
        with connection.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM memory_embeddings WHERE org_id = %s", [tenant_a.org.id])
            assert cursor.fetchone() == (0,)


def test_only_the_service_account_changes_the_deployments_models(tenant_a):
    """Every role reads embedding_models; an organisation's context may not change a row."""
    with tenant_context(tenant_a.org.id):
        assert EmbeddingModel.objects.get(state="active").name == FLOAT32
        assert EmbeddingModel.objects.update(state="retired") == 0
        assert EmbeddingModel.objects.all().delete()[0] == 0
        with pytest.raises(ProgrammingError, match="row-level security"), transaction.atomic():
            EmbeddingModel.objects.create(name=INT8, state="ready")
    assert EmbeddingModel.objects.get(state="active").name == FLOAT32


def test_an_erasure_leaves_no_vector_of_any_model(written, tenant_a, tenant_b):
    reembed.build(model=INT8)
    erased = set(written[tenant_a.org.id])
    with tenant_context(tenant_a.org.id):
        outcome = erasure.erase(tenant_a.org.id, erasure.ErasureScope(agent_id=tenant_a.agent.id), via="command")
    assert outcome.counts["other_model_vectors"] == len(erased) + 3  # the fixture's memories' too
    assert not erased & set(kept(INT8)) and not erased & memory_ids()
    with service_account():
        assert not MemoryEmbedding.objects.filter(org_id=tenant_a.org.id).exists()
        assert MemoryEmbedding.objects.filter(org_id=tenant_b.org.id, model=INT8).count() == len(FACTS) + 2



def test_a_store_item_kept_out_of_search_by_meaning_gets_no_vector_of_any_model(written, tenant_a, api_a):
    """An item put with index=false (the LangGraph store's) is never embedded: no build
    embeds it, and a switch gives it no vector."""
    put = api_a.put("/api/v1/store/items", {"namespace": ["users", "alice"], "key": "prefs",
                                            "value": {"theme": "dark"}, "index": False}, format="json")
    assert put.status_code == 204, put.content
    with tenant_context(tenant_a.org.id):
        item = Memory.objects.get(key="prefs", namespace="users/alice")
    built = reembed.build(model=INT8)
    assert str(item.pk) not in kept(INT8) and built.done == built.total
    command("--activate", INT8)
    with tenant_context(tenant_a.org.id):
        item.refresh_from_db()
    assert (item.indexed, item.embedding, item.embedding_model) == (False, None, "")
