"""Expiry (spec §2's time to live): a memory past its expires_at is gone to every read at once
(memories.reads.selectors, the search's filters), and this sweep removes it for good, with
everything that refers to it, through erasure (the one module that knows every place a
memory lives), recording each organisation's sweep as an erasure and a LifecycleRun."""

from __future__ import annotations

import logging

from django.db import connection
from django.utils import timezone

from memories.errors import NotFound
from memories.lifecycle.erasure import ErasureScope, erase
from memories.models import LifecycleRun
from tenants.context import service_account, tenant_context

logger = logging.getLogger(__name__)


def expired_organisations() -> list:
    """The organisations holding memories past their expiry, read through the index of
    expiring memories (memories_expiring, which leaves deleted ones out: those go with their
    organisation's next sweep)."""
    with service_account(), connection.cursor() as cursor:
        cursor.execute("SELECT DISTINCT org_id FROM memories WHERE expires_at <= now() AND deleted_at IS NULL")
        return [row[0] for row in cursor.fetchall()]


def expire_organisation(org_id) -> int:
    """Remove the organisation's expired memories for good; how many went."""
    started = timezone.now()
    with tenant_context(org_id):
        try:
            outcome = erase(org_id, ErasureScope(expired=True), via="expiry")
        except NotFound:  # another sweep took them first
            return 0
        LifecycleRun.objects.create(org_id=org_id, job=LifecycleRun.Job.EXPIRY, started_at=started,
                                    counts=outcome.counts)
    return outcome.counts["memories"]


def expire() -> int:
    """The sweep (memories.cron, every minute): every organisation's expired memories."""
    removed = sum(expire_organisation(org_id) for org_id in expired_organisations())
    if removed:
        logger.info("expiry: %d memories removed", removed)
    return removed
