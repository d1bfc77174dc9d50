"""Operators of the console: users with a role in one organisation, signed in to a client."""

from __future__ import annotations

from contextlib import contextmanager
from itertools import count

import django_rq
import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from rq import SimpleWorker

from memories.models import Memory
from memories.writes import create
from tenants.context import tenant_context
from tenants.models import Membership

_sequence = count(1)


def operator(org, role: str, *, user=None):
    user = user or get_user_model().objects.create_user(f"console-{role}-{next(_sequence)}", password="a-long-password")
    with tenant_context(org.id):
        Membership.objects.create(org=org, user=user, role=role)
    return user


def remember(owner, content: str, **fields) -> Memory:
    """A memory written through the service, as owner's agent (owner: anything with .org and
    .agent, such as a two-tenant fixture)."""
    fields.setdefault("category", "factual")
    with tenant_context(owner.org.id):
        return create.memory_create(org_id=owner.org.id, agent_id=owner.agent.id, content=content, **fields).memory


def reload(memory: Memory) -> Memory:
    with tenant_context(memory.org_id):
        return Memory.objects.get(pk=memory.pk)


@pytest.fixture
def console_as():
    """console_as(org, role) -> a client signed in as a new member of org with that role."""

    def make(org, role: str = "operator", **kwargs) -> Client:
        client = Client(**kwargs)
        client.user = operator(org, role)
        client.force_login(client.user)
        client.base = f"/console/{org.slug}/"
        return client

    return make


@pytest.fixture
def htmx():
    """Headers of an HTMX request aimed at the element with this id."""

    def headers(target: str | None = None) -> dict:
        return {"HTTP_HX_REQUEST": "true", **({"HTTP_HX_TARGET": target} if target else {})}

    return headers


@contextmanager
def emptied_queue(name: str):
    """The named job queue, emptied before and after; its run() works through it in this
    process, as the worker would."""
    queue = django_rq.get_queue(name)
    queue.empty()

    def run():
        SimpleWorker([queue], connection=queue.connection).work(burst=True)

    queue.run = run
    try:
        yield queue
    finally:
        queue.empty()
