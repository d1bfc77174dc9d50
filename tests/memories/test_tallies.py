"""The memories' tallies (docs/adr/0045): the counts the stats and the dashboard read instead
of counting, kept by row triggers and folded by the cron, equal a full count of the rows after
every kind of write, before and after a fold; the strength bands as last counted."""

import io
import threading
import time
from datetime import timedelta

import pytest
from django.core.management import CommandError, call_command
from django.db import connection, connections, transaction
from django.db.models.functions import Now
from django.utils import timezone

from memories.access import Caller
from memories.lifecycle import decay, erasure, expiry, export, stats, tallies
from memories.lifecycle.portability import ExportScope
from memories.models import Memory, MemoryRelationship
from memories.reads.selectors import NOT_EXPIRED
from memories.use_cases import lifecycle
from memories.writes import change, create, review
from memories.writes.kernel import Actor
from memory_platform import database
from tenants.context import service_account, tenant_context
from tests import factories
from tests.markers import committing
from tests.memories.test_portability import export_to, import_from, remembered

pytestmark = pytest.mark.django_db


def counted_right(org) -> bool:
    """The tallies (folded and not) equal a count of the organisation's rows, and still do
    after a fold; the org-wide stats read from them equal the stats counted row by row; and
    every memory the organisation holds, deleted too, as the erasure and export pages count it."""
    with tenant_context(org.id):
        before = tallies.differences(org.id)
        held_before = held_as_counted(org)
    tallies.fold()
    with tenant_context(org.id):
        after = tallies.differences(org.id)
        held_after = held_as_counted(org)
        held = Memory.objects.filter(org_id=org.id).count()
        read = stats.memory_stats(org_id=org.id)["memories"]
        memories = Memory.objects.filter(org_id=org.id, deleted_at__isnull=True)
        counts, _, related, counted_growth = stats._counted_by_rows(
            memories, org_id=org.id, namespace=None, reach=stats.EVERYWHERE,
            since=timezone.now() - timedelta(days=stats.GROWTH_DAYS))
        relationships = stats.memory_stats(org_id=org.id)["relationships"]
        growth = stats.memory_stats(org_id=org.id)["growth"]
    assert before == [] and after == [], (before, after)
    assert held_before == held_after == (held, held), (held_before, held_after, held)
    assert {name: read[name] for name in counts} == counts
    assert growth == counted_growth
    assert relationships == related, (relationships, related)  # between memories not deleted
    return True


def held_as_counted(org) -> tuple[int, int]:
    """Every memory of the organisation, deleted ones too, as the erasure and export pages count
    them for the whole organisation (from the tallies: docs/adr/0056)."""
    return (erasure.memory_count(org.id, erasure.ErasureScope(everything=True)),
            export.memory_count(org_id=org.id, scope=ExportScope()))


@pytest.fixture
def written(tenant_a):
    org, agent = tenant_a.org, tenant_a.agent
    with tenant_context(org.id):
        batch = create.memory_create_batch(org_id=org.id, agent_id=agent.id, items=[
            {"content": "Melanie adopted a puppy named Oscar", "category": "episodic", "memory_type": "episodic"},
            {"content": "Caroline moved to Sweden", "category": "factual"}])
        one = create.memory_create(org_id=org.id, agent_id=agent.id, content="Caroline likes jazz",
                                   category="preference", namespace="users/caroline").memory
        Memory.objects.filter(pk=batch[1].memory.pk).update(expires_at=timezone.now() + timedelta(hours=1))
    return org, agent, [item.memory for item in batch] + [one]


def test_the_tallies_equal_a_count_after_every_kind_of_write(written, tenant_a):
    org, agent, (puppy, sweden, jazz) = written
    assert counted_right(org)
    actor = Actor(agent_id=agent.id)
    helper = factories.agent(org=org, name="helper")
    steps = [
        lambda: change.memory_update(org_id=org.id, memory_id=jazz.pk, actor=actor,
                                     expected_version=Memory.objects.get(pk=jazz.pk).version,
                                     changes={"content": "Caroline loves jazz", "category": "factual"}),
        lambda: change.memory_delete(org_id=org.id, memory_id=sweden.pk, actor=actor),
        lambda: change.memory_restore(org_id=org.id, memory_id=sweden.pk, actor=actor),
        lambda: change.memory_archive(org_id=org.id, memory_id=puppy.pk, actor=actor),
        lambda: change.memory_unarchive(org_id=org.id, memory_id=puppy.pk, actor=actor),
        lambda: change.memory_supersede(org_id=org.id, memory_id=jazz.pk, agent_id=agent.id, actor=actor,
                                        content="Caroline loves jazz and blues"),
        lambda: change.memory_delete(org_id=org.id, memory_id=jazz.pk, actor=actor),  # one end of a supersession
        lambda: change.memory_restore(org_id=org.id, memory_id=jazz.pk, actor=actor),
        lambda: change.memory_feedback(org_id=org.id, memory_id=puppy.pk, useful=True),
        lambda: Memory.objects.filter(pk=puppy.pk).update(embedding=None, embedding_dimensions=None),  # waits for its embedding
        lambda: Memory.objects.filter(pk=puppy.pk).update(embedding=factories.unit_vector(3), embedding_dimensions=384,
                                                          embedding_model="all-MiniLM-L6-v2"),
        lambda: Memory.objects.filter(pk=sweden.pk).update(decay_rate=0, agent=helper),
        lambda: Memory.objects.filter(pk=sweden.pk).update(expires_at=None, ttl_seconds=None),
        lambda: Memory.objects.filter(pk=jazz.pk).update(created_at=timezone.now() - timedelta(days=3)),
        lambda: Memory.objects.filter(pk=puppy.pk).delete(),  # gone for good
    ]
    for step in steps:
        with tenant_context(org.id):
            step()
        assert counted_right(org)
    pending = factories.memory(org=org, agent=agent, content="a pending thought", status=Memory.Status.PENDING_REVIEW)
    assert counted_right(org)
    with tenant_context(org.id):
        review.memory_approve(org_id=org.id, memory_id=pending.pk, actor=actor)
    assert counted_right(org)


def test_erasure_expiry_and_decay_leave_the_tallies_exact(written):
    org, agent, (puppy, sweden, jazz) = written
    with tenant_context(org.id):
        Memory.objects.filter(pk=sweden.pk).update(expires_at=Now() - timedelta(hours=1))
    assert expiry.expire_organisation(org.id) == 1
    assert counted_right(org)
    with tenant_context(org.id):
        erasure.erase(org.id, erasure.ErasureScope(namespace="users/caroline"), via="api")
    assert counted_right(org)
    old = factories.memory(org=org, agent=agent, content="an old fact nobody asks about")
    with tenant_context(org.id):
        Memory.objects.filter(pk=old.pk).update(created_at=timezone.now() - timedelta(days=400))
    assert decay.decay_organisation(org_id=org.id)["archived"] == 1
    assert counted_right(org)
    with tenant_context(org.id):
        assert stats.memory_stats(org_id=org.id)["memories"]["by_status"]["archived"] == 1
        erasure.erase(org.id, erasure.ErasureScope(everything=True), via="console")  # the whole organisation
    assert counted_right(org)


def test_an_import_is_counted(org_a, org_b, tmp_path):
    remembered(org_a)
    path = tmp_path / "a.jsonl"
    export_to(path, org_a)
    import_from(path, org_b)
    assert counted_right(org_a) and counted_right(org_b)
    with tenant_context(org_b.id):
        imported = stats.memory_stats(org_id=org_b.id)["memories"]
    with tenant_context(org_a.id):
        assert imported["by_status"] == stats.memory_stats(org_id=org_a.id)["memories"]["by_status"]


def test_a_tenant_reads_none_of_another_tenants_tallies(written, tenant_b):
    org, _, _ = written
    factories.memory(org=tenant_b.org, agent=tenant_b.agent, content="Organisation B's memory")
    with tenant_context(org.id):
        assert tallies.tallies(tenant_b.org.id) == []
        for table in (*tallies.TABLES, "memory_strength_bands"):
            with connection.cursor() as cursor:
                cursor.execute(f"SELECT DISTINCT org_id FROM {table}")
                assert {row[0] for row in cursor.fetchall()} <= {org.id}
    with tenant_context(tenant_b.org.id):
        assert tallies.summed(tallies.tallies(tenant_b.org.id)) == Memory.objects.filter(
            org_id=tenant_b.org.id, deleted_at__isnull=True).count() > 0


def test_deleting_an_organisation_folds_its_tallies_away(written):
    org, _, _ = written
    with service_account():
        org.delete()
    tallies.fold()
    with service_account(), connection.cursor() as cursor:
        for table in tallies.TABLES:
            cursor.execute(f"SELECT count(*) FROM {table} WHERE org_id = %s", [org.id])
            assert cursor.fetchone()[0] == 0


def test_verify_reports_a_write_that_bypassed_the_triggers_and_rebuild_repairs_it(written):
    org, agent, _ = written
    call_command("memory_tallies", "--verify", stdout=io.StringIO(), stderr=io.StringIO())
    with tenant_context(org.id), connection.cursor() as cursor:
        cursor.execute("INSERT INTO memory_tally_deltas (org_id, agent_id, status, category, memory_type, n, "
                       "expiring, embedding_pending, not_decaying) VALUES (%s, %s, 'active', 'factual', "
                       "'semantic', 5, 0, 0, 0)", [org.id, agent.id])
    out = io.StringIO()
    with pytest.raises(CommandError, match="1 of .* differ"):
        call_command("memory_tallies", "--verify", stdout=out, stderr=io.StringIO())
    assert f"{org.slug}: " in out.getvalue() and "kept" in out.getvalue()
    call_command("memory_tallies", "--rebuild", "--org", org.slug, stdout=io.StringIO(), stderr=io.StringIO())
    with tenant_context(org.id):
        assert tallies.differences(org.id) == []
    call_command("memory_tallies", "--fold", stdout=io.StringIO())


def test_org_wide_strength_bands_are_about_as_last_counted(written):
    org, agent, (puppy, _, _) = written
    with tenant_context(org.id):
        Memory.objects.filter(pk=puppy.pk).update(decay_rate=0.1, created_at=timezone.now() - timedelta(days=45))
        now = stats.memory_stats(org_id=org.id)["memories"]["strength"]
    assert "about" not in now and now["fading"] == 1  # never counted: counted for the answer
    assert decay.count_bands()["organisations"] >= 1
    factories.memory(org=org, agent=agent, content="written after the count")
    with tenant_context(org.id):
        kept = stats.memory_stats(org_id=org.id)["memories"]["strength"]
        assert kept["about"] is True and kept["as_of"] <= timezone.now()
        assert (kept["strong"], kept["fading"], kept["faded"]) == (now["strong"], now["fading"], now["faded"])
        narrowed = stats.memory_stats(org_id=org.id, namespace="users")["memories"]["strength"]
        assert "about" not in narrowed  # under a namespace: counted for the answer
        shown = stats.dashboard(org.id)
        assert shown.strength_as_of is not None and [f.memory.pk for f in shown.fading] == [puppy.pk]


def test_the_strength_bands_command_counts_them_now_for_one_organisation_or_every_one(written, tenant_b):
    """manage.py strength_bands does what the worker's 10-minute job does (a deployment
    without a worker running yet, a benchmark): the bands kept, "about" as of now."""
    org, _, (puppy, _, _) = written
    with tenant_context(org.id):
        Memory.objects.filter(pk=puppy.pk).update(decay_rate=0.1, created_at=timezone.now() - timedelta(days=45))
    out = io.StringIO()
    call_command("strength_bands", "--org", org.slug, stdout=out)
    assert out.getvalue().startswith(f"{org.slug}: ") and "'fading': 1" in out.getvalue()
    with tenant_context(org.id):
        kept = stats.memory_stats(org_id=org.id)["memories"]["strength"]
    assert kept["about"] is True and kept["fading"] == 1
    with tenant_context(tenant_b.org.id):
        assert "about" not in stats.memory_stats(org_id=tenant_b.org.id)["memories"]["strength"]  # not counted
    call_command("strength_bands", stdout=io.StringIO())
    with tenant_context(tenant_b.org.id):
        assert stats.memory_stats(org_id=tenant_b.org.id)["memories"]["strength"]["about"] is True


def test_the_dashboard_reads_the_tallies_through_its_use_case(written):
    org, agent, _ = written
    with tenant_context(org.id):
        shown = lifecycle.dashboard(Caller(org_id=org.id))
        memories = Memory.objects.filter(org_id=org.id, deleted_at__isnull=True)
        assert shown.total == memories.count() and dict(shown.by_status) == {"active": memories.count()}
        assert dict(shown.by_agent) == {agent.id: memories.filter(agent=agent).count()}
        assert dict(shown.by_category) == {
            category: memories.filter(category=category).count() for category in ("episodic", "factual", "preference")
            if memories.filter(category=category).exists()}
        assert shown.added_per_day[-1][1] == memories.count() and len(shown.added_per_day) == stats.GROWTH_DAYS
        assert shown.embedding_pending == memories.filter(embedding__isnull=True, indexed=True).count()


def namespaces_by_rows(org, caller) -> list[tuple]:
    """What the lists of namespaces show (root, name, live memories), counted from the rows."""
    counted: dict[tuple[str, str], int] = {}
    with tenant_context(org.id):
        live = Memory.objects.filter(NOT_EXPIRED, org_id=org.id, status=Memory.Status.ACTIVE, deleted_at__isnull=True)
        for namespace in live.values_list("namespace", flat=True):
            labels = namespace.split("/")
            if labels[0] in ("users", "runs") and len(labels) > 1 and labels[1] and caller.covers(namespace):
                counted[(labels[0], labels[1])] = counted.get((labels[0], labels[1]), 0) + 1
    return sorted((root, name, n) for (root, name), n in counted.items())


def namespaces_listed(org, caller) -> list[tuple]:
    with tenant_context(org.id):
        return [(row["root"], row["name"], row["memories"])
                for row in lifecycle.namespace_tallies(caller, roots=("users", "runs"))]


def test_the_lists_of_namespaces_read_tallies_equal_to_the_rows(tenant_a):
    """Mem0's users, agents and runs come from the namespace tallies (docs/adr/0057): after every
    kind of write they list what a count of the rows lists, within the caller's reach; a
    memory past its expiry is out at once, before the sweep; an erased user's namespace leaves
    no row behind after the next fold."""
    from memories.access import KeyReach

    org, agent = tenant_a.org, tenant_a.agent
    everyone, alice_only = Caller(org_id=org.id), Caller(org_id=org.id, reach=KeyReach(("users/alice",)))
    with tenant_context(org.id):
        for namespace, content in (("users/alice", "Alice likes tea"), ("users/alice/trips", "Alice went to Oslo"),
                                   ("users/bob", "Bob plays chess"), ("users/bob", "Bob reads Tolstoy"),
                                   ("runs/r-1", "a step of run one"), ("agents/planner", "not a listed root"),
                                   ("users", "under the root alone")):
            create.memory_create(org_id=org.id, agent_id=agent.id, content=content, namespace=namespace,
                                 category="factual")
        item = create.memory_create(org_id=org.id, agent_id=agent.id, content="Bob's diet: vegan",
                                    namespace="users/bob", key="diet", category="preference").memory
    expected = [("runs", "r-1", 1), ("users", "alice", 2), ("users", "bob", 3)]
    assert namespaces_listed(org, everyone) == namespaces_by_rows(org, everyone) == expected
    assert namespaces_listed(org, alice_only) == namespaces_by_rows(org, alice_only) == [("users", "alice", 2)]
    with tenant_context(org.id):
        rows = lifecycle.namespace_tallies(everyone, roots=("users",))
        alice = next(row for row in rows if row["name"] == "alice")
        created = Memory.objects.filter(org_id=org.id, namespace__startswith="users/alice").values_list(
            "created_at", flat=True)
        assert alice["first_created_at"] == min(created) <= alice["last_updated_at"] <= timezone.now()
    actor = Actor(agent_id=agent.id)
    with tenant_context(org.id):
        tea = Memory.objects.get(org_id=org.id, content="Alice likes tea")
        oslo = Memory.objects.get(org_id=org.id, content="Alice went to Oslo")
        chess = Memory.objects.get(org_id=org.id, content="Bob plays chess")
    steps = [
        lambda: change.memory_archive(org_id=org.id, memory_id=tea.pk, actor=actor),
        lambda: change.memory_unarchive(org_id=org.id, memory_id=tea.pk, actor=actor),
        lambda: change.memory_delete(org_id=org.id, memory_id=chess.pk, actor=actor),
        lambda: Memory.objects.filter(pk=oslo.pk).update(namespace="users/carol"),  # moved
        lambda: Memory.objects.filter(pk=item.pk).update(expires_at=Now() - timedelta(minutes=1)),  # not swept yet
        lambda: Memory.objects.filter(pk=tea.pk).update(status=Memory.Status.PENDING_REVIEW),
    ]
    for step in steps:
        with tenant_context(org.id):
            step()
        assert namespaces_listed(org, everyone) == namespaces_by_rows(org, everyone)
        assert namespaces_listed(org, alice_only) == namespaces_by_rows(org, alice_only)
        assert counted_right(org)
    assert namespaces_listed(org, everyone) == [("runs", "r-1", 1), ("users", "bob", 1), ("users", "carol", 1)]
    with tenant_context(org.id):
        erasure.erase(org.id, erasure.ErasureScope(namespace="users/bob"), via="api")
    assert namespaces_listed(org, everyone) == namespaces_by_rows(org, everyone) == [
        ("runs", "r-1", 1), ("users", "carol", 1)]
    tallies.fold()
    with service_account(), connection.cursor() as cursor:
        cursor.execute("SELECT scope FROM memory_namespace_tallies WHERE org_id = %s UNION ALL "
                       "SELECT scope FROM memory_namespace_tally_deltas WHERE org_id = %s", [org.id, org.id])
        assert not [scope for (scope,) in cursor.fetchall() if scope.startswith("users/bob")]


# --------------------------------------------------------------------------- relationships


def relationships_kept(org) -> dict:
    with tenant_context(org.id):
        return tallies.relationships(org.id)


def related(org, source, target, relation_type="supports") -> MemoryRelationship:
    with tenant_context(org.id):
        return MemoryRelationship.objects.create(org_id=org.id, source=source, target=target,
                                                 relation_type=relation_type)


@pytest.fixture
def linked(org_a):
    """Three memories, alone in their organisation: a supports b, b refines c, a contradicts c."""
    org, agent = org_a, factories.agent(org=org_a, name="linker")
    a, b, c = (factories.memory(org=org, agent=agent, content=f"linked fact {name}") for name in "abc")
    related(org, a, b)
    related(org, b, c, "refines")
    related(org, a, c, "contradicts")
    return org, agent, a, b, c


def test_a_relationship_counts_while_neither_of_its_memories_is_deleted(linked):
    org, agent, a, b, c = linked
    assert relationships_kept(org) == {"contradicts": 1, "refines": 1, "supports": 1} and counted_right(org)
    actor = Actor(agent_id=agent.id)
    with tenant_context(org.id):
        change.memory_delete(org_id=org.id, memory_id=a.pk, actor=actor)
    assert relationships_kept(org) == {"refines": 1} and counted_right(org)
    # Related to a deleted memory: not counted; counted once the memory is restored.
    d = factories.memory(org=org, agent=agent, content="linked fact d")
    related(org, d, a, "causal")
    assert relationships_kept(org) == {"refines": 1} and counted_right(org)
    with tenant_context(org.id):
        change.memory_restore(org_id=org.id, memory_id=a.pk, actor=actor)
    assert relationships_kept(org) == {"causal": 1, "contradicts": 1, "refines": 1, "supports": 1}
    assert counted_right(org)

    # Both memories of a relationship deleted in one statement, then restored in one: out once, in once.
    with tenant_context(org.id):
        Memory.objects.filter(pk__in=[a.pk, c.pk]).update(deleted_at=timezone.now())
    assert relationships_kept(org) == {} and counted_right(org)
    with tenant_context(org.id):
        Memory.objects.filter(pk__in=[a.pk, c.pk]).update(deleted_at=None)
    assert relationships_kept(org) == {"causal": 1, "contradicts": 1, "refines": 1, "supports": 1}

    # Its type changed; one of its memories deleted for good; one already deleted, then deleted for good.
    with tenant_context(org.id):
        MemoryRelationship.objects.filter(org_id=org.id, relation_type="causal").update(relation_type="temporal")
    assert relationships_kept(org)["temporal"] == 1 and "causal" not in relationships_kept(org)
    with tenant_context(org.id):
        Memory.objects.filter(pk=d.pk).delete()
    assert relationships_kept(org) == {"contradicts": 1, "refines": 1, "supports": 1} and counted_right(org)
    with tenant_context(org.id):
        change.memory_delete(org_id=org.id, memory_id=b.pk, actor=actor)
        Memory.objects.filter(pk=b.pk).delete()
    assert relationships_kept(org) == {"contradicts": 1} and counted_right(org)
    with tenant_context(org.id):
        Memory.objects.filter(pk__in=[a.pk, c.pk]).delete()  # both at once
    assert relationships_kept(org) == {} and counted_right(org)


def test_a_relationship_says_nothing_of_what_the_insert_claims(linked):
    """The flag is the database's: an insert naming it is decided from the memories all the same."""
    org, agent, a, b, _ = linked
    with tenant_context(org.id):
        change.memory_delete(org_id=org.id, memory_id=b.pk, actor=Actor(agent_id=agent.id))
        with connection.cursor() as cursor:
            cursor.execute("INSERT INTO memory_relationships (id, org_id, source_id, target_id, relation_type, "
                           "predicate, weight, confidence, evidence, metadata, created_at, counted) "
                           "VALUES (gen_random_uuid(), %s, %s, %s, 'causal', '', 1, 0.8, '[]', '{}', now(), true)",
                           [org.id, a.pk, b.pk])
    assert "causal" not in relationships_kept(org) and counted_right(org)


def _in_another_transaction(org, work) -> threading.Thread:
    """work() run as the organisation in a transaction of another connection (a thread's own)."""
    failures = []

    def run():
        try:
            with tenant_context(org.id), transaction.atomic():
                work()
        except Exception as exc:  # noqa: BLE001 - reported by the test
            failures.append(exc)
        finally:
            connection.close()

    thread = threading.Thread(target=run)
    thread.failures = failures
    thread.start()
    return thread


def _waiting_for_a_lock(timeout: float = 10.0) -> bool:
    """Whether a transaction waits for a lock (on a Citus cluster, a row's lock is its worker's)."""
    citus = database.citus_present("owner")
    deadline = time.monotonic() + timeout
    with connections["owner"].cursor() as cursor:
        while time.monotonic() < deadline:
            cursor.execute("SELECT count(*) FROM pg_locks WHERE NOT granted")
            waiting = cursor.fetchone()[0]
            if citus:
                cursor.execute("SELECT coalesce(sum(result::int), 0) FROM run_command_on_workers("
                               "'SELECT count(*) FROM pg_locks WHERE NOT granted') WHERE success")
                waiting += cursor.fetchone()[0]
            if waiting:
                return True
            time.sleep(0.05)
    return False


@committing
def test_two_transactions_deleting_a_relationships_two_memories_count_it_out_once(linked):
    org, agent, a, b, _ = linked
    actor = Actor(agent_id=agent.id)
    with tenant_context(org.id), transaction.atomic():
        change.memory_delete(org_id=org.id, memory_id=a.pk, actor=actor)
        other = _in_another_transaction(org, lambda: change.memory_delete(org_id=org.id, memory_id=b.pk, actor=actor))
        assert _waiting_for_a_lock()  # on the relationship's row, which this transaction uncounted
    other.join(timeout=30)
    assert not other.is_alive() and not other.failures, other.failures
    assert relationships_kept(org) == {}
    assert counted_right(org)


@committing
def test_a_relationship_made_while_the_application_deletes_its_memory_waits_and_is_not_counted(linked):
    org, agent, a, b, _ = linked
    with tenant_context(org.id), transaction.atomic():
        change.memory_delete(org_id=org.id, memory_id=a.pk, actor=Actor(agent_id=agent.id))
        other = _in_another_transaction(org, lambda: MemoryRelationship.objects.create(
            org_id=org.id, source=b, target=a, relation_type="causal"))
        assert _waiting_for_a_lock()  # the delete holds the memory FOR UPDATE
    other.join(timeout=30)
    assert not other.is_alive() and not other.failures, other.failures
    assert "causal" not in relationships_kept(org) and counted_right(org)


@committing
def test_a_relationship_made_while_an_update_deletes_its_memory_is_set_right_by_the_repair(linked):
    """Relating a memory while another transaction deletes it without locking it first (an
    UPDATE of its row alone): neither sees the other's row, and the relationship is left
    counted. The hourly repair counts it out."""
    org, _, a, b, _ = linked
    with tenant_context(org.id), transaction.atomic():
        Memory.objects.filter(pk=a.pk).update(deleted_at=timezone.now())
        other = _in_another_transaction(org, lambda: MemoryRelationship.objects.create(
            org_id=org.id, source=b, target=a, relation_type="causal"))
        other.join(timeout=30)  # not blocked: the key-share lock does not wait for an update of other columns
        assert not other.is_alive() and not other.failures, other.failures
    with tenant_context(org.id):
        assert tallies.differences(org.id) == [(("relationships", "causal"), (1,), (0,))]
    assert tallies.repair_relationships()["repaired"] == 1
    assert "causal" not in relationships_kept(org) and counted_right(org)
    assert tallies.repair_relationships()["repaired"] == 0


@committing
def test_a_relationships_two_memories_restored_at_once_are_set_right_by_the_repair(linked):
    """Each restore sees the other memory still deleted, and neither counts the relationship in."""
    org, _, a, b, _ = linked
    with tenant_context(org.id):
        Memory.objects.filter(pk__in=[a.pk, b.pk]).update(deleted_at=timezone.now())
    assert "supports" not in relationships_kept(org)
    with tenant_context(org.id), transaction.atomic():
        Memory.objects.filter(pk=a.pk).update(deleted_at=None)
        other = _in_another_transaction(org, lambda: Memory.objects.filter(pk=b.pk).update(deleted_at=None))
        other.join(timeout=5)  # other rows: on one node nothing to wait for
    other.join(timeout=30)  # a Citus cluster orders the two updates on the shard: the second waits
    assert not other.is_alive() and not other.failures, other.failures
    with tenant_context(org.id):
        raced = tallies.differences(org.id)
    if database.on_citus():  # the second restore saw the first: counted in
        assert raced == []
    else:
        assert raced == [(("relationships", "supports"), (0,), (1,))]
    assert tallies.repair_relationships()["repaired"] == len(raced)
    assert relationships_kept(org)["supports"] == 1 and counted_right(org)


def test_rebuild_sets_each_relationships_flag_right(linked):
    org, _, a, b, _ = linked
    with tenant_context(org.id):
        with connection.cursor() as cursor:  # a flag set against its memories (the tallies follow the flag)
            cursor.execute("UPDATE memory_relationships SET counted = false WHERE org_id = %s AND source_id = %s "
                           "AND target_id = %s", [org.id, a.pk, b.pk])
        assert tallies.differences(org.id) == [(("relationships", "supports"), (0,), (1,))]
    out = io.StringIO()
    with pytest.raises(CommandError, match="1 of .* differ"):
        call_command("memory_tallies", "--verify", stdout=out, stderr=io.StringIO())
    assert "relationships of type supports kept 0, counted 1" in out.getvalue()
    with tenant_context(org.id):
        tallies.rebuild(org.id)
        assert tallies.differences(org.id) == [] and tallies.relationships(org.id) == {
            "contradicts": 1, "refines": 1, "supports": 1}
        with connection.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM memory_relationships WHERE org_id = %s AND NOT counted", [org.id])
            assert cursor.fetchone()[0] == 0
