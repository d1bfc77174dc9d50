"""Export and import (JSONL): an organisation exported and imported into an empty one exports
again as the same content; a second import adds nothing; a namespace's export holds nothing
of its neighbours; a bad line stops the import with its number and nothing written (or is
skipped and reported); importing into one organisation never touches another."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command

from memories.lifecycle import export, importing
from memories.lifecycle.portability import ExportScope
from memories.models import (
    Artifact,
    DuplicateCandidate,
    Entity,
    EntityAlias,
    Memory,
    MemoryArtifact,
    MemoryEntity,
    MemoryRelationship,
    MemoryTag,
    MemoryUsage,
    MemoryVersion,
    Provenance,
)
from memories.store import writes as store
from memories.understanding import lexicon
from memories.writes import change, create, tagging
from memories.writes.kernel import Actor
from tenants.context import tenant_context
from tenants.models import Agent, Membership, Session
from tests import factories

pytestmark = pytest.mark.django_db

ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
MODELS = (Agent, Session, Memory, MemoryVersion, MemoryTag, MemoryRelationship, MemoryUsage, Entity, EntityAlias,
          MemoryEntity, Artifact, MemoryArtifact, Provenance, DuplicateCandidate)


def remembered(org, user=None) -> dict:
    """An organisation with something in every table an export carries, written through the
    services: memories in several namespaces (users/alice, under it, users/alice2, users/bob),
    of two agents, a session's timeline of episodes, a keyed store item written twice, a
    correction, an archived and a deleted memory, tags, relationships (one across namespaces),
    entities with an alias, an artifact, provenance records, usage and a near-duplicate pair."""
    assistant = factories.agent(org=org, name="assistant")
    helper = factories.agent(org=org, name="helper")
    made = {"assistant": assistant, "helper": helper}
    with tenant_context(org.id):
        session = Session.objects.create(org=org, agent=assistant, namespace="users/alice", external_id="chat-1",
                                         metadata={"channel": "web"})

        def remember(content, agent=assistant, **fields):
            fields.setdefault("category", "factual")
            return create.memory_create(org_id=org.id, agent_id=agent.id, content=content, **fields).memory

        made["lisbon"] = remember("Alice moved to Lisbon in May 2023", namespace="users/alice", tags=["travel", "home"],
                                  session_id=session.id, metadata={"turn": 1}, provenance={"channel": "chat"})
        made["tea"] = remember("Alice prefers green tea", namespace="users/alice", category="preference",
                               entities=[{"name": "Melanie", "type": "person", "aliases": ["Mel"]}])
        made["manager"] = remember("Alice's manager is Bob Stone", namespace="users/alice/work")
        made["chess"] = remember("Alice2 plays chess on Sundays", namespace="users/alice2")
        made["bob"] = remember("Bob works at Acme in Porto", agent=helper, namespace="users/bob")
        for turn, text in enumerate(["Alice: I found a flat near the river.", "Alice: The rent is fair."], 2):
            remember(text, namespace="users/alice", memory_type="episodic", category="episodic", session_id=session.id,
                     metadata={"turn": turn})
        store.store_put(org_id=org.id, agent_id=assistant.id, namespace="users/alice", key="diet",
                        value={"text": "vegetarian"}, index=["text"])
        made["diet"] = store.store_put(org_id=org.id, agent_id=assistant.id, namespace="users/alice", key="diet",
                                       value={"text": "vegan since 2024"}, index=["text"]).memory
        old, result = change.memory_supersede(org_id=org.id, memory_id=made["tea"].id, agent_id=assistant.id,
                                              content="Alice prefers black tea now", actor=Actor(agent_id=assistant.id),
                                              reason="she changed her mind")
        made["black tea"] = result.memory
        archived = remember("Alice once lived in Berlin", namespace="users/alice")
        change.memory_archive(org_id=org.id, memory_id=archived.id, actor=Actor(agent_id=helper.id))
        deleted = remember("Alice's old phone number is gone", namespace="users/alice")
        change.memory_delete(org_id=org.id, memory_id=deleted.id, actor=Actor(agent_id=assistant.id))
        if user is not None:
            tagging.memory_tags_add(org_id=org.id, memory_id=made["manager"].id, tags=["work"],
                                    actor=Actor(changed_by_type="user", user=user, reason="filed"))
        tagging.relationship_create(org_id=org.id, source_id=made["lisbon"].id, target_id=made["manager"].id,
                                    relation_type="supports", predicate="same person", metadata={"by": "test"})
        tagging.relationship_create(org_id=org.id, source_id=made["manager"].id, target_id=made["bob"].id,
                                    relation_type="entity", predicate="manager")
        artifact = Artifact.objects.create(org=org, namespace="users/alice", sha256="b" * 64,
                                           storage_uri="s3://bucket/lease.pdf", artifact_type="document",
                                           metadata={"pages": 3})
        MemoryArtifact.objects.create(org=org, memory=made["lisbon"], artifact=artifact, namespace="users/alice")
        Provenance.objects.create(org=org, memory=made["lisbon"], source_identity="chat", source_event="turn-1",
                                  details={"speaker": "Alice"})
        Provenance.objects.create(org=org, artifact=artifact, source_identity="upload", source_event="u-7")
        MemoryUsage.objects.create(org=org, memory=made["lisbon"], retrieval_count=4)
        DuplicateCandidate.objects.create(org=org, memory=made["black tea"], candidate=made["lisbon"],
                                          similarity=0.93)
    return made


def export_to(path: Path, org, *args: str) -> str:
    out = io.StringIO()
    call_command("export_memories", org.slug, *args, "--output", str(path), stdout=out, stderr=io.StringIO())
    return out.getvalue()


def import_from(path: Path, org, *args: str) -> str:
    out = io.StringIO()
    call_command("import_memories", org.slug, str(path), *args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def counts(org) -> dict:
    with tenant_context(org.id):
        return {model.__name__: model.objects.filter(org_id=org.id).count() for model in MODELS}


def canonical(path: Path) -> list[dict]:
    """The file's records with every id the exporting organisation gave replaced by what names
    it wherever it is: a memory, session or artifact by its origin, an entity by namespace,
    kind and name, an agent by name. Two exports of the same content compare equal."""
    rows = records(path)
    names = {}
    for record in rows:
        if record["type"] in ("memory", "session", "artifact"):
            names[record["id"]] = record["origin"]
        elif record["type"] == "entity":
            names[record["id"]] = f"entity:{record['scope']}:{record['kind']}:{record['name']}"
        elif record["type"] == "agent":
            names[record["id"]] = f"agent:{record['name']}"
    text = ID.sub(lambda found: names.get(found.group(), found.group()), json.dumps(rows[1:]))
    return json.loads(text)


@pytest.fixture
def operator_of_both(org_a, org_b):
    """An operator who is a member of both organisations (versions they made keep them)."""
    user = get_user_model().objects.create_user("portability-operator", password="not-used")
    for org in (org_a, org_b):
        with tenant_context(org.id):
            Membership.objects.create(org=org, user=user, role="operator")
    return user


def test_an_organisation_exported_imported_and_exported_again_is_the_same(org_a, org_b, operator_of_both, tmp_path):
    remembered(org_a, operator_of_both)
    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    assert "exported 11 memories" in export_to(first, org_a)
    out = import_from(first, org_b)
    assert "created " in out and "memories: 11" in out
    export_to(second, org_b)

    assert canonical(second) == canonical(first)
    kinds = {record["type"] for record in records(first)}
    assert kinds == {"header", "agent", "session", "entity", "artifact", "memory", "relationship",
                     "duplicate_candidate", "end"}
    assert {k: v for k, v in counts(org_b).items() if k != "Provenance"} == {
        k: v for k, v in counts(org_a).items() if k != "Provenance"}
    with tenant_context(org_b.id):
        tagged = MemoryVersion.objects.filter(org_id=org_b.id, changed_by_user=operator_of_both).count()
        assert tagged == 1  # the operator is a member here too: the version keeps them
        assert lexicon.differences(org_b.id) == []
        lisbon = Memory.objects.get(org_id=org_b.id, content__startswith="Alice moved to Lisbon")
        assert lisbon.retrieval_count == 4 and lisbon.embedding is not None and lisbon.session.external_id == "chat-1"


def test_a_superseded_memory_follows_its_successor_in_the_file(org_a, tmp_path):
    made = remembered(org_a)
    path = tmp_path / "a.jsonl"
    export_to(path, org_a)
    order = [record["id"] for record in records(path) if record["type"] == "memory"]
    assert order.index(str(made["black tea"].id)) < order.index(str(made["tea"].id))


def test_importing_the_same_file_again_adds_nothing(org_a, org_b, tmp_path):
    remembered(org_a)
    path = tmp_path / "a.jsonl"
    export_to(path, org_a)
    import_from(path, org_b)
    before = counts(org_b)
    with tenant_context(org_b.id):
        report = importing.memories_import(org_id=org_b.id, file=path.open("rb"))
    assert counts(org_b) == before
    assert sum(report.created.values()) == 0 and report.duplicates == 0
    assert report.present["memories"] == 11 and report.present["sessions"] == 1 and report.present["agents"] == 2


def test_importing_an_organisations_own_export_into_it_adds_nothing(org_a, tmp_path):
    remembered(org_a)
    path = tmp_path / "a.jsonl"
    export_to(path, org_a)
    before = counts(org_a)
    out = import_from(path, org_a)
    assert counts(org_a) == before and "created nothing" in out


def test_a_namespace_export_holds_it_and_what_is_under_it_never_its_neighbours(org_a, org_b, tmp_path):
    remembered(org_a)
    path = tmp_path / "alice.jsonl"
    export_to(path, org_a, "--namespace", "users/alice")
    rows = records(path)
    scopes = {record["scope"] for record in rows if record["type"] == "memory"}
    assert scopes == {"users/alice", "users/alice/work"}
    assert all("Alice2" not in record.get("content", "") for record in rows)
    assert rows[0]["scope"] == {"agent": None, "namespace": "users/alice"}
    assert rows[-1]["left_out"] == {"relationships": 1, "duplicate_candidates": 0}  # manager -> Bob's memory
    assert {record["name"] for record in rows if record["type"] == "agent"} == {"assistant", "helper"}  # an archiver

    import_from(path, org_b)
    with tenant_context(org_b.id):
        assert set(Memory.objects.filter(org_id=org_b.id).values_list("namespace", flat=True)) == scopes
        assert not Entity.objects.filter(org_id=org_b.id, namespace__startswith="users/bob").exists()


def test_an_agents_export_holds_its_memories_only(org_a, tmp_path):
    made = remembered(org_a)
    path = tmp_path / "helper.jsonl"
    export_to(path, org_a, "--agent", "helper")
    memories = [record for record in records(path) if record["type"] == "memory"]
    assert [record["content"] for record in memories] == [made["bob"].content]


@pytest.mark.parametrize(("damage", "message"), [
    (lambda lines, n: lines.__setitem__(n, lines[n][:40] + "\n"), "line {n}: not JSON"),
    (lambda lines, n: lines.__setitem__(n, '{"type": "memory", "id": "x"}\n'), "line {n}: id must be an id"),
    (lambda lines, n: lines.__setitem__(n, lines[n].replace('"category":"', '"category":"gossip', 1)),
     "line {n}: category must be one of"),
    (lambda lines, n: lines.__setitem__(n, lines[n].replace('"content":"', '"content":"\\u0000', 1)),
     "line {n}: content holds a NUL character"),
    (lambda lines, n: lines.insert(n, '{"type": "memo"}\n'), "line {n}: type must be one of"),
    (lambda lines, n: lines.pop(), "without its end record: it was cut short"),
    (lambda lines, n: lines.insert(len(lines) - 1, lines[1]), "this agent record comes after the duplicate_candidate records"),
    (lambda lines, n: lines.__setitem__(0, '{"type": "header", "format": "memory-platform-export", "version": 9}\n'),
     "line 1: format version 9"),
])
def test_a_bad_line_stops_the_import_naming_it_and_nothing_is_imported(org_a, org_b, tmp_path, damage, message):
    remembered(org_a)
    path = tmp_path / "a.jsonl"
    export_to(path, org_a)
    lines = path.read_text().splitlines(keepends=True)
    first_memory = next(n for n, text in enumerate(lines) if json.loads(text)["type"] == "memory")
    damage(lines, first_memory)
    path.write_text("".join(lines))
    with pytest.raises(CommandError, match=re.escape(message.format(n=first_memory + 1))) as refused:
        import_from(path, org_b)
    assert "Nothing was imported" in str(refused.value)
    assert all(n == 0 for n in counts(org_b).values())


def test_skipping_bad_lines_imports_the_rest_and_reports_each(org_a, org_b, tmp_path):
    remembered(org_a)
    path = tmp_path / "a.jsonl"
    export_to(path, org_a)
    lines = path.read_text().splitlines(keepends=True)
    memory_lines = [n for n, text in enumerate(lines) if json.loads(text)["type"] == "memory"]
    lines[memory_lines[0]] = "this is not json\n"
    lines[memory_lines[1]] = lines[memory_lines[1]].replace('"agent":"', '"agent":"0', 1)[:-2] + "}\n"
    path.write_text("".join(lines))
    out = import_from(path, org_b, "--skip-bad-lines")
    assert "Bad lines skipped: 2." in out
    assert f"line {memory_lines[0] + 1}: not JSON" in out and f"line {memory_lines[1] + 1}: " in out
    assert counts(org_b)["Memory"] == 9


def test_skipping_bad_lines_a_file_cut_short_is_imported_up_to_where_it_ends(org_a, org_b, tmp_path):
    remembered(org_a)
    path = tmp_path / "a.jsonl"
    export_to(path, org_a)
    lines = path.read_text().splitlines(keepends=True)
    last_memory = max(n for n, text in enumerate(lines) if json.loads(text)["type"] == "memory")
    path.write_text("".join(lines[:last_memory + 1]))
    out = import_from(path, org_b, "--skip-bad-lines")
    assert f"The file ends at line {last_memory + 1} without its end record" in out and "Bad lines" not in out
    assert counts(org_b)["Memory"] == 11 and counts(org_b)["MemoryRelationship"] == 0


def test_a_reference_to_a_record_the_file_does_not_hold_is_a_bad_line(org_a, org_b, tmp_path):
    remembered(org_a)
    path = tmp_path / "a.jsonl"
    export_to(path, org_a)
    rows = records(path)
    entity_lines = [n for n, record in enumerate(rows) if record["type"] == "entity"]
    linked = next(n for n, record in enumerate(rows) if record["type"] == "memory" and record["entities"])
    missing = rows[linked]["entities"][0]["entity"]
    del rows[next(n for n in entity_lines if rows[n]["id"] == missing)]
    path.write_text("".join(json.dumps(record) + "\n" for record in rows))
    with pytest.raises(CommandError, match=f"line {linked}: names entity {missing}, which no entity record"):
        import_from(path, org_b)


def test_duplicates_are_skipped_reported_and_related_to_the_memory_here(org_a, org_b, tmp_path):
    made = remembered(org_a)
    path = tmp_path / "a.jsonl"
    export_to(path, org_a)
    assistant = factories.agent(org=org_b, name="assistant")
    with tenant_context(org_b.id):
        here = create.memory_create(org_id=org_b.id, agent_id=assistant.id, content="Alice moved to Lisbon in May 2023",
                                    namespace="users/alice", category="factual").memory
    out = import_from(path, org_b)
    assert "Duplicates skipped: 1." in out and str(here.id) in out
    with tenant_context(org_b.id):
        assert Memory.objects.filter(org_id=org_b.id, content=made["lisbon"].content).count() == 1
        # The file's relationship from its Lisbon memory now starts at the one here.
        assert MemoryRelationship.objects.filter(org_id=org_b.id, source=here, relation_type="supports").exists()


def test_another_model_s_vectors_are_left_for_the_worker(org_a, org_b, tmp_path):
    remembered(org_a)
    path = tmp_path / "a.jsonl"
    export_to(path, org_a)
    path.write_text(path.read_text().replace('"model":"all-MiniLM-L6-v2"', '"model":"another-model"'))
    out = import_from(path, org_b)
    assert "11 memories came without a vector" in out
    with tenant_context(org_b.id):
        assert not Memory.objects.filter(org_id=org_b.id, embedding__isnull=False).exists()


def test_an_export_without_embeddings_leaves_them_out(org_a, tmp_path):
    remembered(org_a)
    path = tmp_path / "a.jsonl"
    export_to(path, org_a, "--without-embeddings")
    rows = records(path)
    assert rows[0]["embedding"] is None and all(r["embedding"] is None for r in rows if r["type"] == "memory")


def test_importing_into_one_organisation_never_changes_another(org_a, org_b, tmp_path):
    remembered(org_a)
    other = factories.organization("Gamma Corp")
    remembered(other)
    path = tmp_path / "a.jsonl"
    export_to(path, org_a)
    before_a, before_other = counts(org_a), counts(other)
    with tenant_context(org_a.id):
        stats_a = lexicon.statistics(org_a.id, ["lisbon", "alic"])
    import_from(path, org_b)
    assert counts(org_a) == before_a and counts(other) == before_other
    with tenant_context(org_a.id):
        assert lexicon.statistics(org_a.id, ["lisbon", "alic"]) == stats_a
    with tenant_context(org_b.id):  # none of A's ids was reused
        ids_a = {str(i) for i in Memory.objects.filter(org_id=org_a.id).values_list("id", flat=True)}
        assert ids_a == set()  # row-level security: A's rows are not there to see
        ids_b = {str(i) for i in Memory.objects.filter(org_id=org_b.id).values_list("id", flat=True)}
    assert not ids_b & {record["id"] for record in records(path) if record["type"] == "memory"}


def test_imported_memories_are_found_by_search_and_counted_in_the_word_statistics(org_a, org_b, tmp_path,
                                                                                 api_client_for):
    remembered(org_a)
    path = tmp_path / "a.jsonl"
    export_to(path, org_a)
    import_from(path, org_b)
    out = io.StringIO()
    call_command("lexical_stats", "--verify", "--org", org_b.slug, stdout=out, stderr=io.StringIO())
    with tenant_context(org_b.id):
        agent = Agent.objects.get(org_id=org_b.id, name="assistant")
    client = api_client_for(agent)
    for mode in ("vector", "fulltext"):
        found = client.post("/api/v1/search", {"query": "Where did Alice move?", "mode": mode, "limit": 3}).json()
        assert found["results"][0]["memory"]["content"] == "Alice moved to Lisbon in May 2023", mode


def test_the_export_streams_in_chunks(org_a, monkeypatch):
    monkeypatch.setattr(export, "CHUNK", 2)
    remembered(org_a)
    seen = []
    with export.export_snapshot(), tenant_context(org_a.id):
        lines = list(export.memories_export(org=org_a, scope=ExportScope(), progress=seen.append))
    assert seen == [2, 4, 6, 8, 10, 11] and json.loads(lines[-1])["records"]["memory"] == 11


def test_a_record_the_database_refuses_is_named_or_skipped_with_what_names_it(org_a, org_b, tmp_path, monkeypatch):
    made = remembered(org_a)
    path = tmp_path / "a.jsonl"
    export_to(path, org_a)
    # The artifact moves to another namespace: the Lisbon memory's link to it cannot be kept
    # (a link's scope is both ends'), which only the database's keys know.
    rows = records(path)
    lisbon_line = next(n for n, r in enumerate(rows) if r["type"] == "memory" and r["id"] == str(made["lisbon"].id))
    for record in rows:
        if record["type"] == "artifact":
            record["scope"] = "users/elsewhere"
    path.write_text("".join(json.dumps(record) + "\n" for record in rows))
    with pytest.raises(CommandError, match=f"line {lisbon_line + 1}: the database refused it: .*memory_artifacts"):
        import_from(path, org_b)
    assert counts(org_b)["Memory"] == 0

    monkeypatch.setattr(importing, "CHUNK", 3)  # the refused memory shares its chunk with others
    out = import_from(path, org_b, "--skip-bad-lines")
    assert f"line {lisbon_line + 1}: the database refused it" in out and "Bad lines skipped: 1." in out
    assert "relationships: 1" in out  # its edge to the manager memory is left out, not refused
    assert counts(org_b)["Memory"] == 10


def test_a_memory_before_the_one_it_was_superseded_by_is_linked_once_both_are_written(org_a, org_b, tmp_path,
                                                                                      monkeypatch):
    made = remembered(org_a)
    path = tmp_path / "a.jsonl"
    export_to(path, org_a)
    rows = records(path)
    first_memory = next(n for n, r in enumerate(rows) if r["type"] == "memory")
    old = next(n for n, r in enumerate(rows) if r.get("id") == str(made["tea"].id))
    rows.insert(first_memory, rows.pop(old))  # now the superseded memory comes first, out of order
    path.write_text("".join(json.dumps(record) + "\n" for record in rows))
    monkeypatch.setattr(importing, "CHUNK", 2)
    import_from(path, org_b)
    with tenant_context(org_b.id):
        old_here = Memory.objects.get(org_id=org_b.id, content=made["tea"].content)
        assert old_here.status == "superseded" and old_here.superseded_by.content == made["black tea"].content


def test_the_imported_copy_exported_back_into_the_first_organisation_adds_nothing(org_a, org_b, tmp_path):
    remembered(org_a)
    there, back = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    export_to(there, org_a)
    import_from(there, org_b)
    export_to(back, org_b)
    before = counts(org_a)
    out = import_from(back, org_a)
    assert counts(org_a) == before and "created nothing" in out  # each row is found by its origin


def test_an_import_called_for_another_organisation_than_the_one_set_writes_nothing(org_a, org_b, tmp_path):
    remembered(org_a)
    path = tmp_path / "a.jsonl"
    export_to(path, org_a)
    with tenant_context(org_b.id), pytest.raises(importing.ImportFailed, match="row-level security"):
        importing.memories_import(org_id=org_a.id, file=path.open("rb"))  # B's context, A's id
    assert counts(org_b)["Memory"] == 0 and counts(org_a)["Memory"] == 11


def test_a_store_item_kept_out_of_search_by_meaning_stays_so_when_imported(org_a, org_b, tmp_path):
    assistant = factories.agent(org=org_a, name="assistant")
    with tenant_context(org_a.id):
        store.store_put(org_id=org_a.id, agent_id=assistant.id, namespace="users/alice", key="note",
                        value={"text": "kept out of search by meaning"}, index=False)
    path = tmp_path / "a.jsonl"
    export_to(path, org_a)
    [record] = [r for r in records(path) if r["type"] == "memory"]
    assert record["indexed"] is False and record["embedding"] is None
    out = import_from(path, org_b)
    assert "came without a vector" not in out  # nothing waits for the worker
    with tenant_context(org_b.id):
        imported = Memory.objects.get(org_id=org_b.id, key="note")
        assert (imported.indexed, imported.embedding, imported.metadata) == (
            False, None, {"text": "kept out of search by meaning"})
