"""A search's reads by key, and the write of its retrieval event, are planned once a connection
(memory_platform.database.prepared_cursor, docs/adr/0063, 0066); its vector and full-text
statements, whose best plans depend on the query's vector and words, are never prepared
(docs/adr/0035, "Generic plans")."""

import re

import pytest
from django.db import connection

from memories.intake import redaction
from memories.retrieval import events, neighbours, ranking, records, sessions, speakers
from tests.memories.api.test_session_signal import SITTINGS, store

pytestmark = pytest.mark.django_db


def opening(sql: str) -> str:
    """A statement's first words, as pg_prepared_statements shows it ($1 for each %s)."""
    return re.sub(r"\s+", " ", sql).strip()[:40]


def test_a_search_prepares_its_reads_by_key_and_nothing_else(api_a):
    store(api_a, "conversations/1", SITTINGS)
    for _ in range(6):  # past the 5 custom plans after which PostgreSQL may keep a generic one
        response = api_a.post("/api/v1/search", {"query": "What did Caroline feel at the support group?",
                                                 "filters": {"namespace": "conversations/1"}})
        assert response.status_code == 200, response.content
        body = response.json()
        assert body["results"] and body["understood"]["speaker"]["name"] == "Caroline"
        assert "session" in body["understood"]["signals"]
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement, generic_plans + custom_plans FROM pg_prepared_statements")
        prepared = {opening(statement): runs for statement, runs in cursor.fetchall()}
    by_key = {opening(sql) for sql in (neighbours.NEIGHBOURS_SQL, sessions.SESSION_TURNS_SQL, ranking.RANKING_SQL,
                                       speakers.SPEAKERS_SQL, speakers.SPOKEN_SQL, records.RECORDS_SQL,
                                       redaction.POLICY_SQL, events.INSERT_EVENT_SQL)}
    assert set(prepared) <= by_key  # the vector and full-text statements are not among them
    # Each ran six times on one plan cache entry: prepared once, not once a search.
    assert {prepared[opening(sql)] for sql in (neighbours.NEIGHBOURS_SQL, sessions.SESSION_TURNS_SQL,
                                               speakers.SPEAKERS_SQL, speakers.SPOKEN_SQL, records.RECORDS_SQL,
                                               events.INSERT_EVENT_SQL)} == {6}
