"""manage.py erase: an operator erases by namespace, agent, session or the whole organisation,
after seeing what would go; another organisation's memories never move."""

import io

import pytest
from django.core.management import CommandError, call_command

from memories.models import Entity, Erasure, Memory, RetrievalEvent
from tenants.context import tenant_context
from tenants.models import Agent, ApiKey, Session
from tests import factories

pytestmark = pytest.mark.django_db


def erase(*args) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command("erase", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def count(org, model, **where) -> int:
    with tenant_context(org.id):
        return model.objects.filter(**where).count()


def test_without_yes_it_counts_and_erases_nothing(tenant_a):
    before = count(tenant_a.org, Memory)
    out, _ = erase(tenant_a.org.slug, "--namespace", "memories/user-1")
    assert f"{tenant_a.org.slug}, namespace memories/user-1: would erase memories: 2, " in out
    assert "run again with --yes" in out and count(tenant_a.org, Memory) == before
    assert count(tenant_a.org, Erasure) == 1  # the fixture's own; none written by the dry run


def test_erasing_an_agent_takes_its_memories_sessions_and_events_and_keeps_the_agent(tenant_a, tenant_b):
    other = factories.agent(org=tenant_a.org, name="other agent")
    kept = factories.memory(org=tenant_a.org, agent=other, content="The other agent's note", namespace="memories/user-1")
    out, err = erase(tenant_a.org.slug, "--agent", tenant_a.agent.name, "--yes")
    assert "erased memories: 2, " in out and "erasing memories" in err  # the progress bar
    assert count(tenant_a.org, Memory, agent=tenant_a.agent) == 0
    assert count(tenant_a.org, Session, agent=tenant_a.agent) == 0
    assert count(tenant_a.org, RetrievalEvent, agent=tenant_a.agent) == 0
    assert count(tenant_a.org, Memory, pk=kept.pk) == 1
    assert count(tenant_a.org, Agent, pk=tenant_a.agent.pk) == 1 and count(tenant_a.org, ApiKey) >= 1
    assert count(tenant_b.org, Memory) == 2  # the other organisation's, untouched
    with tenant_context(tenant_a.org.id):
        record = Erasure.objects.filter(via="command").get()
    assert record.scope == {"agent": str(tenant_a.agent.id)} and record.counts["memories"] == 2


def test_erasing_everything_empties_the_organisations_memory_and_nothing_else(tenant_a, tenant_b):
    out, _ = erase(str(tenant_a.org.id), "--all", "--yes")
    assert "the whole organisation: erased memories: 2, " in out
    for model in (Memory, Entity, RetrievalEvent, Session):
        assert count(tenant_a.org, model) == 0, model
        assert count(tenant_b.org, model) >= 1, model
    assert count(tenant_a.org, Agent) == 1


def test_erasing_a_session(tenant_a):
    out, _ = erase(tenant_a.org.slug, "--session", str(tenant_a.session.id), "--yes")
    assert "erased memories: 1, " in out and "sessions: 1" in out
    assert count(tenant_a.org, Session) == 0 and count(tenant_a.org, Memory) == 1


@pytest.mark.parametrize(("args", "message"), [
    (["--namespace", "users/nobody", "--yes"], "nothing to erase in namespace users/nobody"),
    (["--session", "not-an-id"], "session must be an id"),
    (["--agent", "no such agent"], "has no agent named or numbered 'no such agent'"),
    (["--namespace", "/"], "the namespace to erase is empty"),
])
def test_bad_or_empty_scopes_are_refused_and_say_why(tenant_a, args, message):
    with pytest.raises(CommandError, match=message):
        erase(tenant_a.org.slug, *args)
    assert count(tenant_a.org, Memory) == 2


def test_an_unknown_organisation_is_refused():
    with pytest.raises(CommandError, match="no organisation with slug or id 'nope'"):
        erase("nope", "--all", "--yes")
