"""The references a deletion empties, as SQL built without a database
(memory_platform.references)."""

import uuid

from memory_platform.references import Rows, cleared_columns, clearing_statements

ORG = uuid.UUID(int=1)
AGENT = uuid.UUID(int=2)


def test_deleting_an_agent_empties_the_references_to_it_and_to_the_memories_that_go_with_it():
    statements = clearing_statements("agents", ORG, Rows.ids([AGENT]))
    assert [sql for sql, _ in statements] == [
        "UPDATE sessions SET agent_id = NULL WHERE org_id = %s AND agent_id IN (SELECT unnest(%s::uuid[]))",
        "UPDATE memory_versions SET changed_by_agent_id = NULL "
        "WHERE org_id = %s AND changed_by_agent_id IN (SELECT unnest(%s::uuid[]))",
        "UPDATE retrieval_events SET agent_id = NULL WHERE org_id = %s AND agent_id IN (SELECT unnest(%s::uuid[]))",
        "UPDATE erasures SET requested_by_agent_id = NULL "
        "WHERE org_id = %s AND requested_by_agent_id IN (SELECT unnest(%s::uuid[]))",
        "UPDATE memories SET superseded_by = NULL WHERE org_id = %s AND superseded_by IN "
        "(SELECT id FROM memories WHERE org_id = %s AND agent_id IN (SELECT unnest(%s::uuid[])))",
        "UPDATE memories SET merged_into = NULL WHERE org_id = %s AND merged_into IN "
        "(SELECT id FROM memories WHERE org_id = %s AND agent_id IN (SELECT unnest(%s::uuid[])))",
    ]
    assert [params for _, params in statements] == [[ORG, [AGENT]]] * 4 + [[ORG, ORG, [AGENT]]] * 2
    for sql, params in statements:
        assert sql.count("%s") == len(params)


def test_rows_given_as_a_query_keep_their_parameters_in_order():
    rows = Rows("SELECT s.id FROM sessions s WHERE s.org_id = %s AND s.scope = %s", (ORG, "users/bob"))
    [(sql, params)] = clearing_statements("sessions", ORG, rows)
    assert sql == ("UPDATE memories SET session_id = NULL WHERE org_id = %s AND session_id IN "
                   "(SELECT s.id FROM sessions s WHERE s.org_id = %s AND s.scope = %s)")
    assert params == [ORG, ORG, "users/bob"]


def test_a_table_nothing_refers_to_needs_nothing_emptied():
    assert clearing_statements("memory_tags", ORG, Rows.ids([AGENT])) == []


def test_of_history_only_the_references_may_be_updated():
    assert cleared_columns("memory_versions") == ("changed_by_agent_id",)
    assert cleared_columns("retrieval_events") == ("agent_id", "replay_of")
    assert cleared_columns("memory_tags") == ()
