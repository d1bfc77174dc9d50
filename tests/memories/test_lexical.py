"""Full text ranks by BM25 from each organisation's own word statistics (docs/adr/0037):
rare words weigh more than common ones, a memory does not win by repeating a word, and one
organisation's memories never move another's scores."""

import pytest
from django.core.management import CommandError, call_command
from django.db import connection

from memories.models import Memory
from memories.retrieval import fulltext
from memories.retrieval.filters import SearchFilters
from memories.understanding import lexicon
from memories.writes import change, create, review
from memories.writes.kernel import Actor
from tenants.context import service_account, tenant_context
from tests import factories
from tests.knobs import with_search_knobs

pytestmark = pytest.mark.django_db

# Written in this order. No memory holds every word of QUESTION; c2 repeats a common word.
CORPUS = {
    "c1": "Caroline: I went to the LGBTQ support group yesterday and it was so powerful",
    "c2": "Caroline: thanks Caroline, says Caroline, signing off as Caroline",
    "c3": "Melanie: the support group meets on Tuesdays",
    "c4": "Caroline: I love painting sunsets",
    "c5": "Caroline: going to the beach with friends",
    "c6": "Melanie: my kids love the beach",
    "c7": "Caroline: had a great time at the concert",
    "c8": "Melanie: I went hiking with my family last weekend and we saw a huge waterfall near the lake, "
          "then we had a picnic, and later a stranger asked whether we knew of a support group for new parents",
}
QUESTION = "Which support group did Caroline attend"
# BM25 with k1 1.2, b 0.75 over N 8, 56 words (avgdl 7), df carolin 5, support 3, group 3,
# attend 0, worked out by hand from those counts (and on PostgreSQL, docs/adr/0037).
BM25_SCORES = {"c1": 2.3814, "c3": 2.1389, "c8": 1.0389, "c2": 0.8334, "c4": 0.5972, "c5": 0.5972, "c7": 0.5972}


@pytest.fixture
def corpus():
    org = factories.organization("Corpus")
    agent = factories.agent(org=org, name="corpus agent")
    ids = {name: factories.memory(org=org, agent=agent, content=content, namespace="corpus").id
           for name, content in CORPUS.items()}
    return org, {memory_id: name for name, memory_id in ids.items()}, agent


def ranked(org, names, query=QUESTION, filters=None, k=10) -> list[tuple[str, float, int]]:
    with tenant_context(org.id):
        hits = fulltext.search(org.id, fulltext.query_words(query), filters or SearchFilters(), k,
                               small=filters is not None)
    return [(names[hit.memory_id], hit.score, hit.rank) for hit in hits]


@pytest.mark.parametrize("path", ["index", "row by row"])
def test_bm25_puts_the_rare_words_above_a_repeated_common_one(corpus, path):
    org, names, _ = corpus
    filters = SearchFilters(namespace="corpus") if path == "row by row" else None
    hits = ranked(org, names, filters=filters)
    assert [name for name, _, _ in hits[:4]] == ["c1", "c3", "c8", "c2"]
    assert {name for name, _, _ in hits[4:]} == {"c4", "c5", "c7"}  # c6 holds none of the words
    for name, score, _ in hits:
        assert score == pytest.approx(BM25_SCORES[name], abs=1e-4)
    assert [rank for _, _, rank in hits] == [1, 2, 3, 4, 5, 5, 5]  # equal scores share a rank


def test_of_the_memories_holding_every_word_the_shorter_rank_first(corpus):
    org, names, _ = corpus
    assert [name for name, _, _ in ranked(org, names, "support group")] == ["c3", "c1", "c8"]


def test_a_query_of_stop_words_finds_nothing(corpus):
    org, names, _ = corpus
    assert ranked(org, names, "which did the") == []


def test_scores_move_with_the_tenants_own_words_only(corpus, tenant_b):
    """Another organisation writing and deleting the very words of the question changes
    nothing in this one's scores, before and after the statistics are folded."""
    org, names, agent = corpus
    before = ranked(org, names)
    other = [factories.memory(org=tenant_b.org, agent=tenant_b.agent, content=f"Caroline support group {n}")
             for n in range(30)]
    assert ranked(org, names) == before
    lexicon.fold()
    with tenant_context(tenant_b.org.id):
        for memory in other[:10]:
            memory.delete()
    assert ranked(org, names) == before
    lexicon.fold()
    assert ranked(org, names) == before
    # ...while the same words written here do move them: "support" and "group" grow common.
    factories.memory(org=org, agent=agent, content="support group notes", namespace="other")
    after = ranked(org, names, filters=SearchFilters(namespace="corpus"))
    assert after[0][0] == "c1" and after[0][1] < before[0][1]


def test_a_tenant_sees_none_of_another_tenants_statistics(corpus, tenant_b):
    org, _, _ = corpus
    factories.memory(org=tenant_b.org, agent=tenant_b.agent, content="zeppelin hangar")
    lexicon.fold()
    factories.memory(org=tenant_b.org, agent=tenant_b.agent, content="zeppelin mooring")  # a delta, not folded
    with tenant_context(org.id):
        assert lexicon.statistics(tenant_b.org.id, ["zeppelin"]).frequency == {"zeppelin": 0}
        for table in lexicon.TABLES:
            with connection.cursor() as cursor:
                cursor.execute(f"SELECT DISTINCT org_id FROM {table}")
                assert {row[0] for row in cursor.fetchall()} <= {org.id}
    with tenant_context(tenant_b.org.id):
        assert lexicon.statistics(tenant_b.org.id, ["zeppelin"]).frequency == {"zeppelin": 2}


def test_the_statistics_match_a_count_of_the_rows_before_and_after_a_fold(corpus):
    org, _, _ = corpus
    with tenant_context(org.id):
        assert lexicon.differences(org.id) == []
        stats = lexicon.statistics(org.id, ["carolin", "support", "group", "attend"])
    assert (stats.documents, stats.tokens) == (8, 56)
    assert stats.frequency == {"carolin": 5, "support": 3, "group": 3, "attend": 0}
    assert lexicon.fold()["folded"] > 0
    with tenant_context(org.id):
        assert lexicon.differences(org.id) == []
        assert lexicon.statistics(org.id, ["carolin", "support", "group", "attend"]) == stats
    call_command("lexical_stats", "--verify")


def counted_right(org) -> bool:
    """The statistics (folded and not) equal a count of the organisation's live rows, and
    still do after a fold."""
    with tenant_context(org.id):
        before = lexicon.differences(org.id)
    lexicon.fold()
    with tenant_context(org.id):
        return before == [] and lexicon.differences(org.id) == []


def test_every_kind_of_write_keeps_the_statistics_exact(corpus):
    """Each write path changes the counts exactly as the rows change: what goes live is
    counted in, what stops being live (deleted, archived, superseded, pending) is counted out."""
    org, names, agent = corpus
    ids = {name: memory_id for memory_id, name in names.items()}
    actor = Actor(agent_id=agent.id)
    with tenant_context(org.id):
        batch = create.memory_create_batch(org_id=org.id, agent_id=agent.id, items=[
            {"content": "Melanie: we adopted a puppy named Oscar", "category": "episodic"},
            {"content": "Caroline: Oscar chews every shoe", "category": "episodic"}])
        create.memory_create(org_id=org.id, agent_id=agent.id, content="Caroline moved to Sweden", category="factual")
    assert counted_right(org)
    steps = [
        lambda: change.memory_update(org_id=org.id, memory_id=ids["c3"], actor=actor,
                                     expected_version=Memory.objects.get(pk=ids["c3"]).version,
                                     changes={"content": "Melanie: the support group meets on Fridays now"}),
        lambda: change.memory_delete(org_id=org.id, memory_id=ids["c4"], actor=actor),
        lambda: change.memory_restore(org_id=org.id, memory_id=ids["c4"], actor=actor),
        lambda: change.memory_archive(org_id=org.id, memory_id=ids["c5"], actor=actor),
        lambda: change.memory_unarchive(org_id=org.id, memory_id=ids["c5"], actor=actor),
        lambda: change.memory_supersede(org_id=org.id, memory_id=ids["c7"], agent_id=agent.id, actor=actor,
                                        content="Caroline: had a great time at the jazz concert"),
        lambda: change.memory_feedback(org_id=org.id, memory_id=ids["c1"], useful=True),
        lambda: Memory.objects.filter(pk=batch[0].memory.pk).delete(),  # erased for good
    ]
    for step in steps:
        with tenant_context(org.id):
            step()
        assert counted_right(org)
    pending = factories.memory(org=org, agent=agent, content="Caroline: a pending thought about kayaks",
                               status=Memory.Status.PENDING_REVIEW)
    assert counted_right(org)
    with tenant_context(org.id):
        review.memory_approve(org_id=org.id, memory_id=pending.pk, actor=actor)
        assert lexicon.statistics(org.id, ["kayak"]).frequency == {"kayak": 1}
    assert counted_right(org)


def test_an_embedding_or_a_retrieval_count_appends_no_delta(corpus):
    org, names, _ = corpus
    lexicon.fold()
    with tenant_context(org.id):
        Memory.objects.filter(pk__in=list(names)).update(embedding=factories.unit_vector(7), importance=0.9)
        with connection.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM memory_lexeme_deltas")
            assert cursor.fetchone()[0] == 0


def test_deleting_an_organisation_folds_its_statistics_away(corpus):
    org, _, _ = corpus
    with service_account():
        org.delete()
    lexicon.fold()
    with service_account(), connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM memory_lexeme_stats WHERE org_id = %s", [org.id])
        assert cursor.fetchone()[0] == 0
        cursor.execute("SELECT count(*) FROM memory_lexeme_deltas WHERE org_id = %s", [org.id])
        assert cursor.fetchone()[0] == 0
        cursor.execute("SELECT count(*) FROM memory_lexeme_emptied")  # named there only during a fold
        assert cursor.fetchone()[0] == 0


def test_verify_reports_statistics_a_write_bypassed_and_rebuild_repairs_them(corpus, capsys):
    org, _, _ = corpus
    with tenant_context(org.id), connection.cursor() as cursor:
        cursor.execute("INSERT INTO memory_lexeme_deltas VALUES (%s, 'support', 1, 0)", [org.id])
    with pytest.raises(CommandError, match="1 of .* organisations' statistics differ"):
        call_command("lexical_stats", "--verify")
    assert "'support' kept docs/tokens (4, 3), counted (3, 3)" in capsys.readouterr().out
    call_command("lexical_stats", "--rebuild", "--org", org.slug)
    call_command("lexical_stats", "--verify")


def test_through_the_index_bm25_scores_the_rows_holding_the_rarest_words_within_its_budget(corpus, settings):
    """On a large tenant BM25 scores the rows holding the query's rarest words, as many words
    as hold at most BM25_CANDIDATE_ROWS rows together; a query of common words alone still
    gets an answer, the rows holding all of them first."""
    org, names, agent = corpus
    for n in range(20):
        factories.memory(org=org, agent=agent, content=f"Caroline: note number {n}")
    settings.MEMORY_PLATFORM = with_search_knobs(settings.MEMORY_PLATFORM, BM25_CANDIDATE_ROWS=5)
    with tenant_context(org.id):
        # support (3 rows) fits the budget, group (3 more) would not: the rows holding
        # "support" are scored, on every word.
        hits = fulltext.search(org.id, ["caroline", "support", "group"], SearchFilters(), 10)
        assert sorted(names[hit.memory_id] for hit in hits) == ["c1", "c3", "c8"]
        # carolin alone is held by 25 rows: the budget's worth of them.
        assert len(fulltext.search(org.id, ["caroline"], SearchFilters(), 10)) == 5
        # With room for all, the name's rows come back too, below the rare words' rows.
        settings.MEMORY_PLATFORM = with_search_knobs(settings.MEMORY_PLATFORM, BM25_CANDIDATE_ROWS=1000)
        hits = fulltext.search(org.id, ["caroline", "support", "group"], SearchFilters(), 10)
        assert sorted(names.get(hit.memory_id) for hit in hits[:3]) == ["c1", "c3", "c8"] and len(hits) == 10


def test_the_deltas_queue_is_vacuumed_whole_and_soon():
    """Every fold leaves the deltas dead; VACUUM would skip their index entries when they sit on
    under 2% of the table's pages (after a bulk write grew it), and every search's statistics
    read walked them: 51 ms at 1M memories instead of 0.6 (memories 0060). The table's own
    settings make each vacuum clean its indexes, and run after 1,000 dead rows."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT reloptions FROM pg_class WHERE oid = 'memory_lexeme_deltas'::regclass")
        options = dict(option.split("=", 1) for option in cursor.fetchone()[0] or [])
    assert options == {"vacuum_index_cleanup": "on", "autovacuum_vacuum_scale_factor": "0",
                       "autovacuum_vacuum_threshold": "1000"}
