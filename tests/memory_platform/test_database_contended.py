"""A request the database rolls back to settle a deadlock with another transaction (on a Citus
cluster also a shard move's switch, ADR-0042) answers 503 with Retry-After, in the API's JSON
error shape; it changed nothing, and the same request sent again goes through.

The deadlock is real: another connection holds the memory's row while the request, which has
already written its key's last use, waits for it; that connection then asks for the key's row."""

from __future__ import annotations

import json
import threading
import time

import psycopg
from django.db import connection
from django.test import Client

from memories.models import Memory
from memory_platform.database import CONTENDED_RETRY_SECONDS
from tenants.context import tenant_context
from tests import factories
from tests.markers import committing

pytestmark = committing


def app_connection(org_id) -> psycopg.Connection:
    """Another session of the application's role, as the organisation."""
    settings = connection.settings_dict
    conn = psycopg.connect(dbname=settings["NAME"], user=settings["USER"], password=settings.get("PASSWORD") or None,
                           host=settings["HOST"], port=settings["PORT"] or None)
    conn.execute(f"SET app.current_org_id = '{org_id}'")
    return conn


def waiting_backends(conn: psycopg.Connection) -> int:
    return conn.execute("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                        "AND datname = current_database()").fetchone()[0]


def test_a_request_rolled_back_for_a_deadlock_answers_503_and_may_be_sent_again(db):
    org = factories.organization("Alpha Corp")
    agent = factories.agent(org=org, name="assistant")
    key_row, key = factories.api_key(agent=agent)
    memory = factories.memory(org=org, agent=agent, content="Alpha Corp prefers green tea")
    api = Client(headers={"Authorization": f"Bearer {key}"})
    other = app_connection(org.id)
    watcher = app_connection(org.id)
    try:
        other.execute("BEGIN")
        other.execute("UPDATE memories SET importance = importance WHERE org_id = %s AND id = %s", [org.id, memory.pk])

        def close_the_cycle():
            # Once the request waits for the memory, ask for the key row it has written.
            deadline = time.monotonic() + 30
            while waiting_backends(watcher) == 0 and time.monotonic() < deadline:
                time.sleep(0.05)
            other.execute("UPDATE api_keys SET last_used_at = now() WHERE org_id = %s AND id = %s",
                          [org.id, key_row.pk])
            other.execute("COMMIT")

        closer = threading.Thread(target=close_the_cycle)
        closer.start()
        response = api.patch(f"/api/v1/memories/{memory.pk}", {"content": "Alpha Corp prefers black coffee"},
                             content_type="application/json", HTTP_IF_MATCH='"1"')
        closer.join(timeout=60)
    finally:
        other.close()
        watcher.close()

    assert response.status_code == 503, response.content[:300]
    assert response["Retry-After"] == str(CONTENDED_RETRY_SECONDS)
    body = json.loads(response.content)
    assert body["error"]["code"] == "database_contended"
    assert "nothing was changed" in body["error"]["message"]
    with tenant_context(org.id):
        assert Memory.objects.get(pk=memory.pk).content == "Alpha Corp prefers green tea"

    again = api.patch(f"/api/v1/memories/{memory.pk}", {"content": "Alpha Corp prefers black coffee"},
                      content_type="application/json", HTTP_IF_MATCH='"1"')
    assert again.status_code == 200, again.content[:300]
    with tenant_context(org.id):
        assert Memory.objects.get(pk=memory.pk).content == "Alpha Corp prefers black coffee"
