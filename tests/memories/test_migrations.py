"""Migrations, applied to a database of their own: twice (the second run changes nothing),
then reversed to zero and applied again."""

import io
import time
import uuid
import warnings

import psycopg
import pytest
from django.core.management import call_command
from django.db import IntegrityError, connections, transaction

from memory_platform.local_services import PostgresEndpoint

APPS_IN_REVERSE = ["memories", "tenants", "admin", "sessions", "django_rq", "auth", "contenttypes"]


def catalog_snapshot(alias: str) -> dict:
    """Everything migrate can change that matters: columns, constraints, indexes, policies,
    triggers, row-level security flags, functions and the runtime role's grants."""
    queries = {
        "columns": """SELECT table_name, column_name, data_type, is_nullable, column_default, is_generated
                      FROM information_schema.columns WHERE table_schema = 'public'""",
        "constraints": """SELECT conrelid::regclass::text, conname, pg_get_constraintdef(oid)
                          FROM pg_constraint WHERE connamespace = 'public'::regnamespace""",
        "indexes": "SELECT tablename, indexname, indexdef FROM pg_indexes WHERE schemaname = 'public'",
        "policies": "SELECT tablename, policyname, cmd, qual, with_check FROM pg_policies",
        "triggers": "SELECT tgrelid::regclass::text, tgname FROM pg_trigger WHERE NOT tgisinternal",
        "rls": """SELECT relname, relrowsecurity, relforcerowsecurity FROM pg_class
                  WHERE relnamespace = 'public'::regnamespace AND relkind = 'r'""",
        "functions": "SELECT proname FROM pg_proc WHERE pronamespace = 'public'::regnamespace",
        "grants": """SELECT table_name, grantee, privilege_type FROM information_schema.role_table_grants
                     WHERE table_schema = 'public'""",
    }
    with connections[alias].cursor() as cursor:
        snapshot = {}
        for name, sql in queries.items():
            cursor.execute(sql)
            snapshot[name] = sorted(cursor.fetchall(), key=repr)
    return snapshot


@pytest.fixture
def scratch(django_db_setup, django_db_blocker):
    """A database of its own (Django's data migrations still read some tables through
    `default`, which django_db_setup points at the migrated test database)."""
    owner = connections["owner"].settings_dict
    name = f"migrations_{uuid.uuid4().hex[:8]}"
    admin_url = PostgresEndpoint(owner["HOST"], owner["PORT"] or 5432).url(user=owner["USER"], database=owner["NAME"])
    if owner.get("PASSWORD"):
        admin_url = admin_url.replace(f"{owner['USER']}@", f"{owner['USER']}:{owner['PASSWORD']}@", 1)
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")  # from template1, which carries pgvector
    connections.settings["scratch"] = {**owner, "NAME": name}
    with django_db_blocker.unblock():
        yield "scratch"
        connections["scratch"].close()
    del connections["scratch"]
    del connections.settings["scratch"]
    _drop(admin_url, name)


def _drop(admin_url: str, name: str, attempts: int = 10) -> None:
    """Drop the scratch database. On a Citus cluster a background worker of the superuser's (the
    maintenance daemon, started for a database that has the extension) may hold a connection to
    it that the owner may not end (InsufficientPrivilege: seen once in 1,202 cluster tests); such
    workers come and go, so the drop is tried again, and at worst the database is left behind
    (named migrations_*, nothing in it the suite reads again) rather than failing the test."""
    for attempt in range(attempts):
        try:
            with psycopg.connect(admin_url, autocommit=True) as conn:
                conn.execute(f"DROP DATABASE {name} WITH (FORCE)")
            return
        except (psycopg.errors.InsufficientPrivilege, psycopg.errors.ObjectInUse) as exc:
            if attempt == attempts - 1:
                warnings.warn(f"scratch database {name} left behind: {type(exc).__name__}", stacklevel=1)
                return
            time.sleep(1)


def test_migrate_twice_changes_nothing_and_migrations_reverse_to_zero(scratch):
    call_command("migrate", database=scratch, verbosity=0)
    applied = catalog_snapshot(scratch)
    assert any(table == "memories" for table, *_ in applied["rls"])

    output = io.StringIO()
    call_command("migrate", database=scratch, verbosity=1, stdout=output)
    assert "No migrations to apply." in output.getvalue()
    assert catalog_snapshot(scratch) == applied

    for app in APPS_IN_REVERSE:
        call_command("migrate", app, "zero", database=scratch, verbosity=0)
    emptied = catalog_snapshot(scratch)
    assert [table for table, *_ in emptied["rls"]] == ["django_migrations"]
    assert emptied["policies"] == [] and emptied["triggers"] == []
    assert not {"set_updated_at", "forbid_rewrite"} & {name for (name,) in emptied["functions"]}

    call_command("migrate", database=scratch, verbosity=0)
    assert catalog_snapshot(scratch) == applied


def memory_row(scratch, org, agent, *, content: str, namespace: str = "", category: str = "factual",
               memory_type: str = "semantic"):
    """A memory inserted with the columns every migration since 0013 has (the model may have
    more than the schema a test migrated to), as the service account; its Memory, unsaved."""
    from memories.models import Memory
    from memories.writes.kernel import content_hash

    memory = Memory(org=org, agent=agent, content=content, content_hash=content_hash(content), namespace=namespace,
                    category=category, memory_type=memory_type)
    with connections[scratch].cursor() as cursor:
        cursor.execute("""
            INSERT INTO memories (id, org_id, agent_id, content, content_hash, category, memory_type, source,
                                  status, confidence, usefulness_score, importance, sensitivity, validation_status,
                                  scope, provenance, metadata, decay_rate, is_protected, version, embedding_model,
                                  created_at, updated_at)
            VALUES (%s, %s, %s, %s, %s, %s, %s, 'extracted', 'active', 0.8, 0.5, 0, 'internal', 'unverified', %s,
                    '{}', '{}', 0.1, false, 1, '', now(), now())
        """, [memory.pk, org.pk, agent.pk, content, memory.content_hash, category, memory_type, namespace])
    return memory


def test_dedup_moves_within_namespaces_without_changing_a_row(scratch):
    """Memories 0014-0015 on a database that has data: near-duplicate pairs found across two
    namespaces are closed (not deleted), pairs within one stay open, and afterwards the same
    sentence may live once in each namespace, never twice in one."""
    from memories.models import DuplicateCandidate, Memory
    from tenants.context import service_account
    from tenants.models import Agent, Organization

    call_command("migrate", "tenants", database=scratch, verbosity=0)  # the models as they are now
    call_command("migrate", "memories", "0013", database=scratch, verbosity=0)
    with service_account(using=scratch):
        org = Organization.objects.using(scratch).create(name="Migrated", slug="migrated")
        agent = Agent.objects.using(scratch).create(org=org, name="agent")

        def memory(namespace: str, content: str) -> Memory:
            return memory_row(scratch, org, agent, namespace=namespace, content=content)

        alice, bob = memory("users/alice", "Lives in Lisbon"), memory("users/bob", "Lives in Lisbon, Portugal")
        alice_again = memory("users/alice", "Lives in Lisbon (Portugal)")
        across = DuplicateCandidate.objects.using(scratch).create(org=org, memory=bob, candidate=alice, similarity=0.95)
        within = DuplicateCandidate.objects.using(scratch).create(org=org, memory=alice_again, candidate=alice,
                                                                  similarity=0.95)
    call_command("migrate", "memories", database=scratch, verbosity=0)

    with service_account(using=scratch):
        pairs = DuplicateCandidate.objects.using(scratch)
        assert pairs.get(pk=across.pk).resolution == "other_namespace" and pairs.get(pk=across.pk).resolved_at
        assert pairs.get(pk=within.pk).resolved_at is None
        assert Memory.objects.using(scratch).count() == 3
        memory("users/carol", "Lives in Lisbon")
        with pytest.raises(IntegrityError, match="memories_content_hash_live_unique"), \
                transaction.atomic(using=scratch):
            memory("users/bob", "lives in LISBON, portugal")


def migrated_to(scratch, migration: str, slug: str):
    """The scratch database with the memories app migrated up to `migration` (the rest fully),
    and an organisation with an agent in it."""
    from tenants.context import service_account
    from tenants.models import Agent, Organization

    call_command("migrate", "tenants", database=scratch, verbosity=0)
    call_command("migrate", "memories", migration, database=scratch, verbosity=0)
    with service_account(using=scratch):
        org = Organization.objects.using(scratch).create(name=slug.title(), slug=slug)
        return org, Agent.objects.using(scratch).create(org=org, name="agent")


def test_idempotency_keys_stored_before_are_hashed_so_a_retry_still_finds_its_response(scratch):
    from memories.api.idempotency import key_digest
    from memories.models import IdempotencyRecord
    from tenants.context import service_account

    org, agent = migrated_to(scratch, "0015", "retried")
    with service_account(using=scratch):
        record = IdempotencyRecord.objects.using(scratch).create(
            org=org, agent=agent, key="order-42 for jane", request_fingerprint="f" * 64, response_status=201)
    call_command("migrate", "memories", database=scratch, verbosity=0)
    with service_account(using=scratch):
        assert IdempotencyRecord.objects.using(scratch).get(pk=record.pk).key == key_digest("order-42 for jane")


def test_entity_links_stored_before_roles_learn_who_spoke(scratch):
    from memories.models import Entity
    from tenants.context import service_account

    org, agent = migrated_to(scratch, "0019", "chat")
    with service_account(using=scratch):
        memory = memory_row(scratch, org, agent, content="Mel O'Neil: Caroline, how was it?", category="episodic",
                            namespace="chats")
        people = {name: Entity.objects.using(scratch).create(org=org, namespace="chats", kind="person", name=name,
                                                             key=name.lower()) for name in ("Mel O'Neil", "Caroline")}
        with connections[scratch].cursor() as cursor:
            for name, entity in people.items():
                cursor.execute("INSERT INTO memory_entities (id, org_id, memory_id, entity_id, mention, source, created_at)"
                               " VALUES (gen_random_uuid(), %s, %s, %s, %s, 'extractor', now())",
                               [org.pk, memory.pk, entity.pk, name])
    call_command("migrate", "memories", database=scratch, verbosity=0)
    with service_account(using=scratch), connections[scratch].cursor() as cursor:
        cursor.execute("SELECT mention, role FROM memory_entities ORDER BY mention")
        assert cursor.fetchall() == [("Caroline", "mentioned"), ("Mel O'Neil", "speaker")]


def test_links_stored_before_issue_34_learn_who_spoke_in_every_transcript_shape(scratch):
    """Migration 0038: a person the text opens with in a transcript shape is its speaker; a
    person it only mentions, or a memory that already has its speaker, stays as it was."""
    from memories.models import Entity
    from tenants.context import service_account

    org, agent = migrated_to(scratch, "0037", "shapes")
    texts = {"Melanie said: I went camping": "Melanie", "[Mel O'Neil] we went too": "Mel O'Neil",
             "[10:32] Oscar: fine": "Oscar", "**Ann**: hello": "Ann", "Ben (10:32): hi": "Ben",
             "> Cleo wrote: see below": "Cleo", "Dan - on my way": "Dan", "We met Eve at noon": "Eve",
             "Fay: hi, Gus": "Gus"}
    with service_account(using=scratch):
        people = {name: Entity.objects.using(scratch).create(org=org, namespace="chats", kind="person", name=name,
                                                             key=name.lower()) for name in [*texts.values(), "Fay"]}
        with connections[scratch].cursor() as cursor:
            for content, name in texts.items():
                memory = memory_row(scratch, org, agent, content=content, category="episodic", namespace="chats")
                cursor.execute("INSERT INTO memory_entities (id, org_id, memory_id, entity_id, mention, source, "
                               "created_at) VALUES (gen_random_uuid(), %s, %s, %s, %s, 'extractor', now())",
                               [org.pk, memory.pk, people[name].pk, name])
                if name == "Gus":  # Fay already speaks it (migration 0020's shape)
                    cursor.execute("INSERT INTO memory_entities (id, org_id, memory_id, entity_id, mention, source, "
                                   "role, created_at) VALUES (gen_random_uuid(), %s, %s, %s, 'Fay', 'extractor', "
                                   "'speaker', now())", [org.pk, memory.pk, people["Fay"].pk])
    call_command("migrate", "memories", database=scratch, verbosity=0)
    with service_account(using=scratch), connections[scratch].cursor() as cursor:
        cursor.execute("SELECT mention, role FROM memory_entities ORDER BY mention")
        assert dict(cursor.fetchall()) == {
            "Melanie": "speaker", "Mel O'Neil": "speaker", "Oscar": "speaker", "Ann": "speaker", "Ben": "speaker",
            "Cleo": "speaker", "Dan": "speaker", "Eve": "mentioned", "Fay": "speaker", "Gus": "mentioned"}


def test_episodes_stored_before_decay_do_not_decay_and_the_rest_keep_their_rate(scratch):
    from memories.models import Memory
    from tenants.context import service_account

    org, agent = migrated_to(scratch, "0021", "decay")
    with service_account(using=scratch):
        episode = memory_row(scratch, org, agent, content="Caroline: hi", memory_type="episodic")
        fact = memory_row(scratch, org, agent, content="Caroline lives in Lyon")
    call_command("migrate", "memories", database=scratch, verbosity=0)
    with service_account(using=scratch):
        rates = dict(Memory.objects.using(scratch).values_list("content", "decay_rate"))
    assert rates == {episode.content: 0.0, fact.content: 0.1}


def test_relationships_stored_before_their_tallies_are_counted_between_memories_not_deleted(scratch):
    """Migration 0053: a relationship touching a deleted memory is not counted, the rest are, and
    the counts equal a recount once its triggers keep them."""
    from memories.lifecycle import tallies
    from tenants.context import service_account

    org, agent = migrated_to(scratch, "0052", "related")
    with service_account(using=scratch):
        a, b, c = (memory_row(scratch, org, agent, content=f"related fact {name}") for name in "abc")
        with connections[scratch].cursor() as cursor:
            for source, target, relation_type in ((a, b, "supports"), (b, c, "supports"), (a, c, "refines")):
                cursor.execute("INSERT INTO memory_relationships (id, org_id, source_id, target_id, relation_type, "
                               "predicate, weight, confidence, evidence, metadata, created_at) VALUES "
                               "(gen_random_uuid(), %s, %s, %s, %s, '', 1, 0.8, '[]', '{}', now())",
                               [org.pk, source.pk, target.pk, relation_type])
            cursor.execute("UPDATE memories SET deleted_at = now() WHERE id = %s", [c.pk])
    call_command("migrate", "memories", database=scratch, verbosity=0)
    with service_account(using=scratch), connections[scratch].cursor() as cursor:
        cursor.execute(tallies.CURRENT_RELATIONSHIPS, {"org": org.pk})
        assert dict(cursor.fetchall()) == {"supports": 1}
        cursor.execute("UPDATE memories SET deleted_at = NULL WHERE id = %s", [c.pk])  # the triggers count it in
        cursor.execute(tallies.CURRENT_RELATIONSHIPS, {"org": org.pk})
        assert dict(cursor.fetchall()) == {"refines": 1, "supports": 2}
