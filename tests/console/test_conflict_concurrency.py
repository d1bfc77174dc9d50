"""Two operators resolving the same conflict at the same moment: one resolution wins, the other
is told the conflict is gone, and the history holds exactly one set of versions."""

import threading
import time

from django.db import connection, transaction

from memories.errors import MemoryServiceError
from memories.models import Memory, MemoryVersion
from memories.writes import conflicts
from tenants.context import tenant_context
from tests.console.conftest import operator
from tests.markers import committing


@committing
def test_concurrent_resolutions_of_one_conflict_exactly_one_wins(tenant_a):
    pair = [tenant_a.memory.pk, tenant_a.other_memory.pk]
    candidate = tenant_a.duplicate_candidate.pk
    users = [operator(tenant_a.org, "operator"), operator(tenant_a.org, "operator")]
    outcomes, started = [], threading.Barrier(3)

    def resolve(user, resolution):
        try:
            started.wait()
            with tenant_context(tenant_a.org.id):
                conflicts.conflict_resolve(org_id=tenant_a.org.id, kind="duplicate", conflict_id=candidate,
                                           resolution=resolution, user=user, keep_id=pair[0])
            outcomes.append("resolved")
        except MemoryServiceError as error:
            outcomes.append(error.code)
        finally:
            connection.close()

    threads = [threading.Thread(target=resolve, args=(users[0], "both_valid")),
               threading.Thread(target=resolve, args=(users[1], "keep"))]
    # Hold both memories locked until both resolvers are under way, so they truly overlap.
    with tenant_context(tenant_a.org.id), transaction.atomic():
        list(Memory.objects.select_for_update().filter(pk__in=pair))
        for thread in threads:
            thread.start()
        started.wait()
        time.sleep(1)
    for thread in threads:
        thread.join(timeout=60)

    assert sorted(outcomes) == ["not_found", "resolved"]
    with tenant_context(tenant_a.org.id):
        resolution_versions = MemoryVersion.objects.filter(memory_id__in=pair, changed_by_type="conflict_resolution")
        statuses = set(Memory.objects.filter(pk__in=pair).values_list("status", flat=True))
        assert resolution_versions.count() == 2  # one per memory, from the winner only
    assert statuses in ({"active"}, {"active", "superseded"})
