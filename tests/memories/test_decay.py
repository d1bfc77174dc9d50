"""Decay (issue 19, item 1): strength from age, accesses and importance; the nightly job
archives what faded, with a version saying why, and nothing else; it is idempotent and stays
within each organisation; a memory brought back starts its clock again."""

from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from memories.lifecycle import decay, export, importing, strength
from memories.lifecycle.export import ExportScope
from memories.models import LifecycleRun, Memory, MemoryUsage, MemoryVersion
from memories.writes.change import memory_confirm, memory_unarchive
from memories.writes.kernel import Actor
from tenants.context import tenant_context
from tests import factories

pytestmark = pytest.mark.django_db


def aged(memory: Memory, days: float) -> Memory:
    """The memory as if written `days` ago."""
    with tenant_context(memory.org_id):
        Memory.objects.filter(pk=memory.pk).update(created_at=timezone.now() - timedelta(days=days))
        return Memory.objects.get(pk=memory.pk)


def retrieved(memory: Memory, *, count: int, days_ago: float) -> None:
    with tenant_context(memory.org_id):
        MemoryUsage.objects.update_or_create(org_id=memory.org_id, memory_id=memory.pk, defaults={
            "retrieval_count": count, "last_retrieved_at": timezone.now() - timedelta(days=days_ago)})


def status_of(memory: Memory) -> str:
    with tenant_context(memory.org_id):
        return Memory.objects.get(pk=memory.pk).status


def make(tenant, content: str, days: float, **fields) -> Memory:
    return aged(factories.memory(org=tenant.org, agent=tenant.agent, content=content, **fields), days)


def test_strength_in_sql_is_the_same_as_in_python(tenant_a):
    cases = [make(tenant_a, "plain and old", 40), make(tenant_a, "important", 40, importance=0.9),
             make(tenant_a, "fresh", 0), make(tenant_a, "often used", 120, decay_rate=0.3)]
    retrieved(cases[3], count=12, days_ago=9)
    with tenant_context(tenant_a.org.id), connection.cursor() as cursor:
        cursor.execute(f"SELECT m.id, {strength.strength_sql('m', 'u')} FROM memories m "
                       "LEFT JOIN memory_usage u ON u.org_id = m.org_id AND u.memory_id = m.id "
                       "WHERE m.org_id = %s AND m.id = ANY(%s)", [tenant_a.org.id, [c.pk for c in cases]])
        in_sql = dict(cursor.fetchall())
        now = timezone.now()
        for memory in Memory.objects.filter(pk__in=[c.pk for c in cases]):
            assert in_sql[memory.pk] == pytest.approx(strength.of(memory, now), rel=1e-4), memory.content
    assert in_sql[cases[2].pk] == pytest.approx(1.0, abs=1e-4) and in_sql[cases[0].pk] < in_sql[cases[1].pk]


def test_the_nightly_job_archives_only_what_faded_with_a_version_saying_why(tenant_a):
    faded = make(tenant_a, "the user once mentioned a dentist appointment", 200)
    used = make(tenant_a, "the user likes long walks", 200)
    retrieved(used, count=3, days_ago=1)
    confirmed = make(tenant_a, "the user is allergic to peanuts", 0)
    with tenant_context(tenant_a.org.id):
        memory_confirm(org_id=tenant_a.org.id, memory_id=confirmed.pk, actor=Actor())
    aged(confirmed, 400)
    episode = make(tenant_a, "Caroline: I went to the support group", 400, memory_type="episodic", decay_rate=0.0)
    fresh = make(tenant_a, "the user adopted a cat", 0)

    counts = decay.decay_organisation(org_id=tenant_a.org.id)

    assert counts["archived"] == 1
    assert status_of(faded) == "archived"
    assert [status_of(m) for m in (used, confirmed, episode, fresh)] == ["active"] * 4
    with tenant_context(tenant_a.org.id):
        version = MemoryVersion.objects.filter(memory_id=faded.pk).order_by("-version_num").first()
        assert version.operation == "archive" and version.changed_by_type == "system"
        assert version.change_reason.startswith("decay: strength 0.0") and "below 0.05" in version.change_reason
        assert version.status == "archived" and version.content == faded.content
        assert LifecycleRun.objects.filter(job="decay", counts=counts).count() == 1

    # Idempotent: the second run finds nothing more to archive, and writes no second version.
    assert decay.decay_organisation(org_id=tenant_a.org.id)["archived"] == 0
    with tenant_context(tenant_a.org.id):
        assert MemoryVersion.objects.filter(memory_id=faded.pk, operation="archive").count() == 1


def test_the_job_of_one_organisation_leaves_anothers_faded_memories_alone(tenant_a, tenant_b):
    ours, theirs = make(tenant_a, "an old fact of Alpha", 300), make(tenant_b, "an old fact of Beta", 300)
    decay.decay_organisation(org_id=tenant_a.org.id)
    assert status_of(ours) == "archived" and status_of(theirs) == "active"
    with tenant_context(tenant_a.org.id):
        assert not LifecycleRun.objects.filter(org_id=tenant_b.org.id).exists()
    totals = decay.decay()  # the cron job: every organisation, each as itself
    assert status_of(theirs) == "archived" and totals["archived"] >= 1 and totals["organisations"] >= 2


def test_a_memory_brought_back_from_decay_starts_its_clock_again(tenant_a):
    memory = make(tenant_a, "the user's first car was red", 300)
    decay.decay_organisation(org_id=tenant_a.org.id)
    with tenant_context(tenant_a.org.id):
        back = memory_unarchive(org_id=tenant_a.org.id, memory_id=memory.pk, actor=Actor())
        assert back.status == "active" and strength.of(Memory.objects.get(pk=memory.pk), timezone.now()) > 0.99
    assert decay.decay_organisation(org_id=tenant_a.org.id)["archived"] == 0
    assert status_of(memory) == "active"


def test_the_weak_list_is_the_weakest_first_with_when_each_would_go(tenant_a):
    weakest, weaker, strong = make(tenant_a, "weakest", 70), make(tenant_a, "weaker", 30), make(tenant_a, "strong", 1)
    with tenant_context(tenant_a.org.id):
        fading, total = decay.weak_memories(org_id=tenant_a.org.id)
    assert [f.memory.pk for f in fading] == [weakest.pk, weaker.pk] and total == 2
    assert fading[0].strength < fading[1].strength < 0.5
    assert timezone.now() < fading[0].archived_after < fading[1].archived_after
    assert strong.pk not in [f.memory.pk for f in fading]


def weak_ids(page: decay.WeakPage) -> list:
    return [fading.memory.pk for fading in page.fading]


def test_the_organisations_weak_list_is_served_as_counted_and_equals_the_scan(tenant_a, tenant_b):
    ages = [70, 45, 30, 25, 60, 1, 2]
    made = [make(tenant_a, f"memory {days} days old", days) for days in ages]
    make(tenant_b, "another organisation's faded memory", 90)
    with tenant_context(tenant_a.org.id):
        scanned = decay.weak_page(org_id=tenant_a.org.id)
        assert scanned.as_of is None and scanned.label == {}
        decay.count_organisation_bands(org_id=tenant_a.org.id)
        counted = decay.weak_page(org_id=tenant_a.org.id)
        assert counted.as_of is not None and counted.label == {"about": True, "as_of": counted.as_of}
        assert weak_ids(counted) == weak_ids(scanned) == [made[0].pk, made[4].pk, made[1].pk, made[2].pk, made[3].pk]
        assert counted.count == scanned.count == 5
        assert [f.strength for f in counted.fading] == pytest.approx([f.strength for f in scanned.fading], rel=1e-3)
        assert [f.archived_after for f in counted.fading] == [f.archived_after for f in scanned.fading]
        second = decay.weak_page(org_id=tenant_a.org.id, limit=2, offset=2)
        assert weak_ids(second) == [made[1].pk, made[2].pk] and second.count == 5
        lower = decay.weak_page(org_id=tenant_a.org.id, below=0.3)
        assert weak_ids(lower) == weak_ids(decay.weak_page(org_id=tenant_a.org.id, below=0.3, namespace=""))


def test_a_memory_confirmed_or_retrieved_since_the_count_leaves_the_list_at_once(tenant_a):
    confirmed, used, kept = make(tenant_a, "confirmed", 70), make(tenant_a, "used", 60), make(tenant_a, "kept", 50)
    with tenant_context(tenant_a.org.id):
        decay.count_organisation_bands(org_id=tenant_a.org.id)
        memory_confirm(org_id=tenant_a.org.id, memory_id=confirmed.pk, actor=Actor())
    retrieved(used, count=3, days_ago=0)
    with tenant_context(tenant_a.org.id):
        page = decay.weak_page(org_id=tenant_a.org.id)
    assert page.as_of is not None and weak_ids(page) == [kept.pk] and page.count == 1


def test_a_page_past_the_kept_weakest_or_a_narrower_list_is_counted_exactly(tenant_a, monkeypatch):
    made = [make(tenant_a, f"memory {days} days old", days) for days in (70, 60, 50, 40)]
    monkeypatch.setattr(decay, "WEAKEST_KEPT", 2)
    with tenant_context(tenant_a.org.id):
        decay.count_organisation_bands(org_id=tenant_a.org.id)
        first = decay.weak_page(org_id=tenant_a.org.id, limit=2)
        assert first.as_of is not None and weak_ids(first) == [made[0].pk, made[1].pk] and first.count == 4
        deeper = decay.weak_page(org_id=tenant_a.org.id, limit=2, offset=1)  # past the two kept: the scan
        assert deeper.as_of is None and weak_ids(deeper) == [made[1].pk, made[2].pk] and deeper.count == 4
        lower = decay.weak_page(org_id=tenant_a.org.id, below=0.4, limit=1)  # their count is not kept: the scan
        assert lower.as_of is None and lower.count == len(decay.weak_memories(org_id=tenant_a.org.id, below=0.4)[0])
        under = decay.weak_page(org_id=tenant_a.org.id, namespace=made[0].namespace or "users")
        assert under.as_of is None


def test_an_import_counts_the_weakest_again(tenant_a, tenant_b, tmp_path, django_capture_on_commit_callbacks):
    old = make(tenant_a, "an old memory that faded", 70)
    with tenant_context(tenant_a.org.id):
        (tmp_path / "a.jsonl").write_text("".join(export.memories_export(org=tenant_a.org, scope=ExportScope())))
    with tenant_context(tenant_b.org.id):
        decay.count_organisation_bands(org_id=tenant_b.org.id)
        assert decay.weak_page(org_id=tenant_b.org.id).count == 0
        with (tmp_path / "a.jsonl").open("rb") as exported, django_capture_on_commit_callbacks(execute=True):
            importing.memories_import(org_id=tenant_b.org.id, file=exported)
        page = decay.weak_page(org_id=tenant_b.org.id)
    assert page.as_of is not None and [f.memory.content for f in page.fading] == [old.content]
