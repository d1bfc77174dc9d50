"""A secret sent through any free-text channel ends up in no table, no Redis key and no log.

Free text (content, metadata, provenance, reasons, predicates, search queries) is redacted;
identifiers (namespaces, keys, tags) holding a secret are refused, since redacting two of
them to one placeholder would merge what they identify; Idempotency-Keys are kept hashed.
"""

import logging
import zlib
from pathlib import Path

import pytest
from django.conf import settings
from django.db import IntegrityError, connections, transaction

from memories.caching import cache
from memories.writes import conflicts, review
from memories.writes.kernel import Actor
from memory_platform import local_services
from tenants.context import service_account, tenant_context
from tests import factories
from tests.markers import committing

# A GitHub token's shape (detect-secrets' rule); made up.
MARKER = "ghp_" + "Q7hLm2Rt9Vb4Nc8Kd1Fh6Jw3Ps5Ty0Ua2ZeX9"


def rows_holding(marker: str) -> dict[str, int]:
    """Every table of the schema, read whole as the owner with the service account."""
    owner = connections["owner"]
    with service_account(using="owner"), owner.cursor() as cursor:
        cursor.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
        found = {}
        for (table,) in cursor.fetchall():
            cursor.execute(f'SELECT count(*) FROM "{table}" t WHERE strpos(t::text, %s) > 0', [marker])
            if count := cursor.fetchone()[0]:
                found[table] = count
    return found


def redis_values_holding(marker: str) -> list[str]:
    client, needle, found = cache.client(), marker.encode(), []
    for key in client.scan_iter(count=1000):
        kind = client.type(key).decode()
        values = {"string": lambda: [client.get(key)], "hash": lambda: [*client.hgetall(key).items()],
                  "list": lambda: client.lrange(key, 0, -1), "set": lambda: client.smembers(key),
                  "zset": lambda: client.zrange(key, 0, -1)}.get(kind, lambda: [])()
        blobs = [key, *(part for value in values for part in (value if isinstance(value, tuple) else (value,)))]
        for blob in filter(None, blobs):
            try:
                blob = zlib.decompress(blob)  # RQ keeps its jobs' data compressed
            except zlib.error:
                pass
            if needle in blob:
                found.append(key.decode(errors="replace"))
    return found


def postgres_log() -> Path | None:
    """The embedded server's log (another server's is out of reach)."""
    log = local_services.data_dir() / "postgres" / "log"
    return log if settings.EMBEDDED_POSTGRES and log.exists() else None


@committing
def test_a_secret_sent_through_every_free_text_channel_is_stored_nowhere(tenant_a, api_a, caplog):
    caplog.set_level(logging.DEBUG)
    log = postgres_log()
    log_start = log.stat().st_size if log else 0
    org_id = tenant_a.org.id

    def ok(response, *statuses):
        assert response.status_code in (statuses or (200, 201)), response.content
        return response.json()

    def refused(response, field, status=400):
        assert response.status_code == status, response.content
        assert response.json()["error"]["fields"].keys() == {field} and MARKER not in response.content.decode()

    created = ok(api_a.post("/api/v1/memories", {
        "content": f"The deploy token is {MARKER}", "metadata": {"note": f"token {MARKER}", MARKER: "as a key"},
        "provenance": {"source_event": MARKER}, "namespace": ["users", "alice"]},
        HTTP_IDEMPOTENCY_KEY=f"retry-{MARKER}"))["memory"]
    other = ok(api_a.post("/api/v1/memories", {"content": "Deploys happen on Thursdays"}))["memory"]
    assert MARKER not in str(created), created
    assert "[REDACTED:" in created["content"]

    ok(api_a.post("/api/v1/memories", {"memories": [{"content": f"Batch with {MARKER}", "metadata": {"k": MARKER}}]}))
    ok(api_a.patch(f"/api/v1/memories/{other['id']}", {"content": f"Changed to {MARKER}",
                                                       "metadata": {"why": MARKER}}, HTTP_IF_MATCH='"1"'))
    third = ok(api_a.post("/api/v1/memories", {"content": "Deploys never happen on Thursdays"}))["memory"]
    ok(api_a.post(f"/api/v1/memories/{third['id']}/relationships", {
        "target_id": other["id"], "relation_type": "contradicts", "predicate": MARKER, "metadata": {"m": MARKER}}))
    ok(api_a.post(f"/api/v1/memories/{created['id']}/supersede",
                              {"content": f"Rotated: {MARKER}", "reason": f"rotated {MARKER}"}))
    for path, body in (("/api/v1/search", {"query": f"token {MARKER}", "filters": {"namespace": f"users/{MARKER}"}}),
                       ("/api/v1/retrieve", {"query": f"token {MARKER}", "scope": f"users/{MARKER}"}),
                       ("/api/v1/store/items/search", {"namespace_prefix": ["users"], "query": MARKER,
                                                       "filter": {"k": MARKER}})):
        ok(api_a.post(path, body))

    # Identifiers holding it are refused, and nothing of them is kept.
    refused(api_a.post("/api/v1/memories", {"content": "Tagged", "tags": [MARKER]}), "tags[0]")
    refused(api_a.post("/api/v1/memories", {"content": "Namespaced", "namespace": ["users", MARKER]}), "namespace")
    refused(api_a.put("/api/v1/store/items", {"namespace": ["users", "alice"], "key": MARKER, "value": {}}), "key",
            status=422)
    refused(api_a.post(f"/api/v1/memories/{other['id']}/tags", {"tags": [MARKER]}), "tags[0]")

    # The console's channels: a reviewer's reason, a conflict's resolution note.
    pending = factories.memory(org=tenant_a.org, agent=tenant_a.agent, content="Waiting for review",
                               status="pending_review")
    with tenant_context(org_id):
        review.memory_reject(org_id=org_id, memory_id=pending.pk, actor=Actor(reason=f"leaks {MARKER}"))
        [conflict] = [c for c in conflicts.open_conflicts(org_id=org_id) if str(c.first.pk) == third["id"]]
        conflicts.conflict_resolve(org_id=org_id, kind=conflict.kind, conflict_id=conflict.id,
                                   resolution=conflicts.BOTH_VALID, user=None, reason=f"see {MARKER}")

    # An ordinary dedup race, as PostgreSQL sees it: a unique violation on an insert.
    with pytest.raises(IntegrityError), transaction.atomic():
        for _ in range(2):
            factories.memory(org=tenant_a.org, agent=tenant_a.agent, content=f"Raced {MARKER}", embedding=None)

    assert rows_holding(MARKER) == {}
    assert rows_holding("[REDACTED:")  # the channels were really written
    assert redis_values_holding(MARKER) == []
    assert MARKER not in caplog.text
    if log is not None:
        with log.open(errors="replace") as server_log:
            server_log.seek(log_start)
            written = server_log.read()
        assert "duplicate key value violates unique constraint" in written and MARKER not in written
