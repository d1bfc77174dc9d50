"""The memory schema's own rules, enforced by PostgreSQL whatever the application does."""

import hashlib
import random
from decimal import Decimal

import pytest
from django.db import IntegrityError, ProgrammingError, connection, connections, transaction
from django.utils import timezone

from memories.models import Memory, MemoryVersion
from tenants.context import service_account, tenant_context
from tests import factories
from tests.markers import committing


def test_a_second_live_memory_with_the_same_org_agent_namespace_and_hash_is_refused(tenant_a):
    duplicate = dict(org=tenant_a.org, agent=tenant_a.agent, content=tenant_a.memory.content,
                     namespace=tenant_a.memory.namespace)
    with pytest.raises(IntegrityError, match="memories_content_hash_live_unique"), transaction.atomic():
        factories.memory(**duplicate)


def test_the_same_content_is_fine_in_another_namespace(tenant_a):
    """A namespace is an end user's boundary: the same sentence for two users is two memories."""
    for namespace in ("users/alice", "users/bob"):
        factories.memory(org=tenant_a.org, agent=tenant_a.agent, content=tenant_a.memory.content, namespace=namespace)


def test_the_same_content_may_live_again_once_the_first_is_deleted_or_superseded(tenant_a):
    with tenant_context(tenant_a.org.id):
        Memory.objects.filter(pk=tenant_a.memory.pk).update(deleted_at=timezone.now())
    again = factories.memory(org=tenant_a.org, agent=tenant_a.agent, content=tenant_a.memory.content)
    with tenant_context(tenant_a.org.id):
        Memory.objects.filter(pk=again.pk).update(status="archived")
    factories.memory(org=tenant_a.org, agent=tenant_a.agent, content=tenant_a.memory.content)


def test_the_same_content_is_fine_for_another_agent_or_organisation(tenant_a, tenant_b):
    other_agent = factories.agent(org=tenant_a.org, name="second agent")
    factories.memory(org=tenant_a.org, agent=other_agent, content=tenant_a.memory.content)
    factories.memory(org=tenant_b.org, agent=tenant_b.agent, content=tenant_a.memory.content)


@pytest.mark.parametrize(
    ("changes", "constraint"),
    [
        ({"content": ""}, "memories_content_not_empty"),
        ({"content": "x" * 8193}, "memories_content_max_length"),
        ({"category": "opinion"}, "memories_category_valid"),
        ({"memory_type": "long_term"}, "memories_memory_type_valid"),
        ({"source": "rumour"}, "memories_source_valid"),
        ({"status": "deleted"}, "memories_status_valid"),
        ({"validation_status": "maybe"}, "memories_validation_status_valid"),
        ({"confidence": Decimal("1.001")}, "memories_confidence_range"),
        ({"usefulness_score": Decimal("-0.001")}, "memories_usefulness_range"),
        ({"importance": Decimal("1.5")}, "memories_importance_range"),
        ({"sensitivity": ""}, "memories_sensitivity_not_empty"),
        ({"content_hash": "not-a-sha"}, "memories_content_hash_is_sha256"),
        ({"is_protected": True}, "memories_protected_do_not_decay"),
        ({"decay_rate": -0.1}, "memories_decay_rate_non_negative"),
        ({"embedding_dimensions": None}, "memories_embedding_described"),
    ],
)
def test_check_constraints_reject_bad_values(tenant_a, changes, constraint):
    with tenant_context(tenant_a.org.id):
        with pytest.raises(IntegrityError, match=constraint), transaction.atomic():
            Memory.objects.filter(pk=tenant_a.memory.pk).update(**changes)


def test_an_active_memory_cannot_name_its_successor(tenant_a):
    with tenant_context(tenant_a.org.id):
        with pytest.raises(IntegrityError, match="memories_superseded_or_active"), transaction.atomic():
            Memory.objects.filter(pk=tenant_a.memory.pk).update(superseded_by=tenant_a.other_memory.pk)
        Memory.objects.filter(pk=tenant_a.memory.pk).update(status="superseded", superseded_by=tenant_a.other_memory.pk)


def test_embedding_must_have_384_dimensions(tenant_a):
    with tenant_context(tenant_a.org.id):
        with pytest.raises(Exception, match="expected 384 dimensions"), transaction.atomic():
            Memory.objects.filter(pk=tenant_a.memory.pk).update(embedding=[0.1] * 383)


def test_full_text_vector_follows_the_content(tenant_a):
    with tenant_context(tenant_a.org.id):
        Memory.objects.filter(pk=tenant_a.memory.pk).update(
            content="Deployments happen on Thursdays", content_hash=hashlib.sha256(b"x").hexdigest()
        )
        found = Memory.objects.filter(search_vector="thursday").values_list("pk", flat=True)
        assert list(found) == [tenant_a.memory.pk]


@pytest.mark.django_db
def test_every_gin_index_takes_entries_at_once_with_no_pending_list():
    """A GIN index's pending list is read whole by every scan of it: at 1M memories ~10,000
    updates made each full-text search's index scans several times slower (migration 0008), and
    the events' returned ids, scanned once per memory of an erasure's scope, took a namespace of
    10,000 three times as long to count with 19 pages pending (migration 0057). A GIN index added
    later without fastupdate off fails here."""
    with connection.cursor() as cursor:
        cursor.execute("""
            SELECT c.relname, coalesce(c.reloptions, '{}') FROM pg_class c JOIN pg_am am ON am.oid = c.relam
            WHERE am.amname = 'gin' AND c.relkind = 'i' AND c.relnamespace = 'public'::regnamespace
              AND c.relname !~ '_[0-9]+$'  -- a Citus shard's own copy, named after its shard
        """)
        indexes = dict(cursor.fetchall())
    assert "retrieval_events_returned" in indexes and "memories_tenant_fts" in indexes
    assert {name for name, options in indexes.items() if "fastupdate=off" not in options} == set()


def test_a_memory_of_several_hundred_characters_keeps_its_text_in_its_row(tenant_a):
    """Beside the 1.5 kB vector, such a memory passed PostgreSQL's default 2 kB threshold and
    its text and tsvector went to the TOAST table, an extra lookup on every read of either
    (migration 0011). Written now, they stay in the row; only its tenant-tagged lexemes, which
    no search reads back, may go out (migration 0013). pg_column_toast_chunk_id needs
    PostgreSQL 16, the oldest the project supports."""
    words = ("user keeps vegetarian kitchen cycles work along river prefers green tea mornings visits "
             "sister lisbon spring budget review quarterly deploys thursday standup allergic peanuts "
             "shellfish reads novels evenings plays chess weekends plans trip japan autumn").split()
    rng = random.Random(5)
    written = []
    for _ in range(20):  # text as varied as prose, which compresses little
        content = " ".join(f"{rng.choice(words)}{rng.randrange(1000)}" for _ in range(80))
        assert 600 < len(content) < 1200
        written.append(factories.memory(org=tenant_a.org, agent=tenant_a.agent, content=content).pk)
    with tenant_context(tenant_a.org.id), connection.cursor() as cursor:
        cursor.execute("SELECT count(*), count(*) FILTER (WHERE pg_column_toast_chunk_id(content) IS NULL "
                       "AND pg_column_toast_chunk_id(search_vector) IS NULL) FROM memories WHERE id = ANY(%s)",
                       [written])
        assert cursor.fetchone() == (20, 20)


def test_updated_at_is_maintained_by_the_database_on_every_update(tenant_a):
    with tenant_context(tenant_a.org.id):
        before = Memory.objects.get(pk=tenant_a.memory.pk).updated_at
        with connection.cursor() as cursor:  # raw SQL: no Django auto_now involved
            cursor.execute("UPDATE memories SET last_injected_at = now() WHERE id = %s", [tenant_a.memory.pk])
        after = Memory.objects.get(pk=tenant_a.memory.pk).updated_at
    assert after > before


def test_the_runtime_role_may_not_rewrite_versions(tenant_a):
    with tenant_context(tenant_a.org.id):
        with pytest.raises(ProgrammingError, match="permission denied"), transaction.atomic():
            MemoryVersion.objects.filter(pk=tenant_a.version.pk).update(content="history rewritten")


@committing
def test_not_even_the_owner_may_rewrite_versions_only_clear_their_references(tenant_a):
    with connections["owner"].cursor() as cursor, transaction.atomic(using="owner"):
        cursor.execute("SET LOCAL app.service_account = 'on'")
        with pytest.raises(IntegrityError, match="memory_versions rows are immutable"), transaction.atomic(using="owner"):
            cursor.execute("UPDATE memory_versions SET content = 'rewritten' WHERE id = %s", [tenant_a.version.pk])
        # What deleting the agent that made the change does first (memory_platform.references).
        cursor.execute("UPDATE memory_versions SET changed_by_agent_id = NULL WHERE id = %s", [tenant_a.version.pk])
        assert cursor.rowcount == 1


def test_deleting_a_memory_removes_its_history_tags_and_links(tenant_a):
    with tenant_context(tenant_a.org.id):
        Memory.objects.filter(pk=tenant_a.memory.pk).delete()
        for related in ("versions", "tags", "artifact_links", "provenance_records", "incoming_relationships"):
            assert not getattr(Memory, related).field.model.objects.filter(
                **{getattr(Memory, related).field.name + "_id": tenant_a.memory.pk}
            ).exists(), related
    with service_account():
        assert Memory.objects.filter(pk=tenant_a.other_memory.pk).exists()
