"""Sessions (spec §2; spec §4's session lifecycle): one conversation or task run of an agent,
grouping the memories written in it.

An agent opens a session (or finds its open one again by its own id for it, `external_id`),
writes memories naming it (`session_id`), and closes it once. A closed session takes no new
memory (memories.writes.create holds the session while a write names it, so a close waits for
the writes in flight and no write lands after it). Closing queues the session's consolidation
(memories.lifecycle.consolidation); the sweep there catches a close whose job was lost.

A session lies in a namespace (possibly none): a key limited to namespaces opens
sessions only under them, and sees only those.

What a session keeps is redacted by the organisation's policy as a memory's is: its metadata
has secrets (and personal data, if asked) replaced; its external_id and namespace identify it,
so one holding either is refused.
"""

from __future__ import annotations

import logging

from django.db import connection, transaction
from django.db.models import Count, OuterRef, QuerySet, Subquery
from django.db.models.functions import Coalesce
from django.utils import timezone

from memories.access import EVERYWHERE, KeyReach, namespace_prefix_filter
from memories.errors import Conflict, InvalidInput, NotFound
from memories.intake.redaction import IdentifierHoldsSecret, redactor_for
from memories.lifecycle import consolidation
from memories.models import Memory
from tenants.models import Session

logger = logging.getLogger(__name__)

OPEN, CLOSED = "open", "closed"


def _with_counts(queryset: QuerySet) -> QuerySet:
    """Sessions with `memory_count`: their live memories. A subquery, not a join and GROUP BY:
    a session's primary key is (org_id, id), so grouping by id alone would not cover its
    other columns."""
    live = (Memory.objects.filter(org_id=OuterRef("org_id"), session_id=OuterRef("pk"),
                                  status=Memory.Status.ACTIVE, deleted_at__isnull=True)
            .order_by().values("session_id").annotate(n=Count("*")).values("n"))
    return queryset.annotate(memory_count=Coalesce(Subquery(live), 0))


def session_open(*, org_id, agent_id, external_id: str = "", namespace: str = "", metadata: dict | None = None,
                 reach: KeyReach = EVERYWHERE) -> tuple[Session, bool]:
    """Open a session for the agent; with an external_id the agent's open session of that id is
    returned instead when there is one in the namespace asked (an agent keeps its own id for a
    conversation, and may send it again): with a namespace, the one kept under exactly it, so
    Alice's thread-1 is never found for Bob's, nor told to a key that does not reach it; with
    none, any. Returns (session, created)."""
    reach.check_write(namespace)
    redactor = redactor_for(org_id)
    try:
        redactor.check_identifier(external_id, field="external_id")
        redactor.check_identifier(namespace, field="namespace")
    except IdentifierHoldsSecret as refused:
        raise InvalidInput(str(refused), field=refused.field) from None
    metadata, _ = redactor.json(metadata or {})
    with transaction.atomic():
        if external_id:
            # Two requests opening the same conversation at once find one session, not two.
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))",
                               [f"session:{org_id}:{agent_id}:{external_id}"])
            open_sessions = Session.objects.filter(org_id=org_id, agent_id=agent_id, external_id=external_id,
                                                   ended_at__isnull=True)
            if namespace:
                open_sessions = open_sessions.filter(namespace=namespace)
            found = _with_counts(open_sessions).order_by("-started_at").first()
            if found is not None:
                return found, False
        session = Session.objects.create(org_id=org_id, agent_id=agent_id, external_id=external_id, namespace=namespace,
                                         metadata=metadata)
    session.memory_count = 0
    return session, True


def session_list(*, org_id, agent=None, status: str | None = None, namespace: str | None = None,
                 external_id: str | None = None, session_ids=None, reach: KeyReach = EVERYWHERE) -> QuerySet:
    """The organisation's sessions within the key's reach, newest first, with their counts
    (session_ids: of these only)."""
    queryset = Session.objects.filter(reach.memories(), org_id=org_id)
    if session_ids is not None:
        queryset = queryset.filter(pk__in=list(session_ids))
    if agent is not None:
        queryset = queryset.filter(agent_id=agent)
    if status == OPEN:
        queryset = queryset.filter(ended_at__isnull=True)
    elif status == CLOSED:
        queryset = queryset.filter(ended_at__isnull=False)
    if namespace:
        queryset = queryset.filter(namespace_prefix_filter(namespace))
    if external_id:
        queryset = queryset.filter(external_id=external_id)
    return _with_counts(queryset)


def session_get(*, org_id, session_id, reach: KeyReach = EVERYWHERE) -> Session:
    """A session in reach; one out of reach is missing, as another organisation's is."""
    found = _with_counts(Session.objects.filter(reach.memories(), org_id=org_id, pk=session_id)).first()
    if found is None:
        raise NotFound(f"session {session_id} not found")
    return found


def session_close(*, org_id, session_id, reach: KeyReach = EVERYWHERE, consolidate: bool = True) -> Session:
    """Close a session: it takes no new memory, and its consolidation is queued (after
    commit; if Redis is out of reach the sweep runs it). Closing a closed session is a conflict."""
    with transaction.atomic():
        session = Session.objects.select_for_update().filter(reach.memories(), org_id=org_id, pk=session_id).first()
        if session is None:
            raise NotFound(f"session {session_id} not found")
        reach.check_write(session.namespace)
        if session.ended_at is not None:
            raise Conflict(f"session {session_id} is already closed", code="session_closed")
        session.ended_at = timezone.now()
        fields = ["ended_at"]
        if not consolidate:
            session.consolidated_at = session.ended_at  # nothing to do: the sweep leaves it be
            fields.append("consolidated_at")
        session.save(update_fields=fields)
        if consolidate:
            consolidation.enqueue(org_id, session.pk)
    return session_get(org_id=org_id, session_id=session_id, reach=reach)


def session_state(session: Session) -> str:
    return CLOSED if session.ended_at else OPEN
