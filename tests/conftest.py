"""Test database set-up and two-tenant fixtures.

The suite runs against real PostgreSQL + pgvector and Redis (embedded servers under
.data/test unless DATABASE_URL / REDIS_URL say otherwise), connected as the same two roles
as production: tests read and write through `default`, the runtime role that row-level
security applies to; the test database is created and migrated through `owner`. The embedded
servers start when the first test needing them does (`embedded_servers`), not before.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connections

from memory_platform import local_services
from tests import factories
from tests.knobs import with_rate_limits, with_search_knobs

# The Python client (clients/python) is a package of its own, installed with pip from its folder
# by its users; the tests import it from its source, as it is in this checkout.
CLIENT_SOURCE = Path(__file__).resolve().parent.parent / "clients" / "python" / "src"
if str(CLIENT_SOURCE) not in sys.path:
    sys.path.insert(0, str(CLIENT_SOURCE))


@pytest.fixture(scope="session")
def embedded_servers():
    """The embedded PostgreSQL and Redis the settings point at (none with DATABASE_URL and
    REDIS_URL set), started for the session's first test that needs them: every test using the
    database, through django_db_setup, and a test using Redis alone, by asking for this."""
    local_services.start_for_settings()


# The suite's cluster splits each table into 8 shard groups instead of Citus's 32: the shards
# are made again for every test database and moved by the operations tests (tests/citus), and
# fewer keep those minutes shorter while two workers still hold several each.
SUITE_SHARD_COUNT = 8


def suite_shard_count(database: str) -> None:
    import psycopg
    from psycopg import sql

    endpoint = local_services.postgres_endpoint()
    with psycopg.connect(endpoint.url(user="postgres", database=database), autocommit=True) as conn:
        conn.execute(sql.SQL("ALTER DATABASE {} SET citus.shard_count = {}").format(
            sql.Identifier(database), sql.Literal(SUITE_SHARD_COUNT)))


@pytest.fixture(scope="session")
def django_db_setup(django_test_environment, django_db_blocker, embedded_servers):
    """Create the test database as the owner role, and point the runtime role at it.

    Django's own set-up would create and migrate the database through `default`, which may
    neither create databases nor tables; and it would treat `owner` as a second database.
    """
    owner, default = connections["owner"], connections["default"]
    real_name = default.settings_dict["NAME"]
    with django_db_blocker.unblock():
        test_name = owner.creation._get_test_db_name()
        # Set first: Django's own data migrations read some tables through `default`.
        for alias in ("default", "owner"):
            connections[alias].close()
            connections[alias].settings_dict["NAME"] = test_name
            settings.DATABASES[alias]["NAME"] = test_name
        owner.settings_dict["NAME"] = real_name
        cluster = settings.EMBEDDED_POSTGRES and local_services.citus_workers() > 0
        if cluster:
            # Citus keeps its nodes per database: the test database is made on every node,
            # with the workers known to it, before the owner migrates (and distributes) it.
            local_services.drop_cluster_database(test_name)
            local_services.prepare_cluster_database(test_name)
            suite_shard_count(test_name)
        owner.creation.create_test_db(verbosity=0, autoclobber=True, serialize=False, keepdb=cluster)
        default.close()
    yield
    with django_db_blocker.unblock():
        default.close()
        if cluster:
            owner.close()
            local_services.drop_cluster_database(test_name)
        else:
            owner.creation.destroy_test_db(real_name, verbosity=0)
        default.settings_dict["NAME"] = real_name
        settings.DATABASES["default"]["NAME"] = real_name


@pytest.fixture(autouse=True)
def active_model_read_again():
    """Each test reads the active embedding model from its own database: a switch of model a
    test made, and rolled back with its transaction, is not remembered by the next one."""
    yield
    from memories.vectors import embeddings

    embeddings.forget_active_model()


@pytest.fixture
def org_a(db):
    return factories.organization("Alpha Corp")


@pytest.fixture
def org_b(db):
    return factories.organization("Beta Corp")


@pytest.fixture
def tenant_a(org_a):
    """Organisation A with one row in every tenant table."""
    return factories.populated_tenant(org_a)


@pytest.fixture
def tenant_b(org_b):
    return factories.populated_tenant(org_b)


@pytest.fixture
def api_client_for():
    """An API client authenticated with a fresh key of the given agent."""
    from rest_framework.test import APIClient

    def make(agent):
        _, key = factories.api_key(agent=agent, name="test client")
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
        client.key = key
        return client

    return make


@pytest.fixture
def api_a(tenant_a, api_client_for):
    return api_client_for(tenant_a.agent)


@pytest.fixture
def api_b(tenant_b, api_client_for):
    return api_client_for(tenant_b.agent)


@pytest.fixture
def int8_queries(settings):
    """QUERY_EMBEDDING_PRECISION "int8" for one test, the process's query embedder loaded anew."""
    from memories.caching import cache
    from memories.vectors import embeddings

    settings.MEMORY_PLATFORM = with_search_knobs(settings.MEMORY_PLATFORM, QUERY_EMBEDDING_PRECISION="int8")
    embeddings._embedders.pop(embeddings.INT8_MODEL_NAME, None)
    cache._embed_query_cached.cache_clear()
    yield
    embeddings._embedders.pop(embeddings.INT8_MODEL_NAME, None)
    cache._embed_query_cached.cache_clear()


@pytest.fixture
def rate_limits(settings, embedded_servers):
    """Set low rate limits for one test: `rate_limits(API_KEY="3/min", ...)`. Every counter in
    Redis is cleared before and after, and a Redis failure an earlier test left behind is
    forgotten, so no test sees another's counts."""
    from memory_platform import rate_limits as limits

    def configure(**knobs):
        settings.MEMORY_PLATFORM = with_rate_limits(settings.MEMORY_PLATFORM, **knobs)

    redis_url = settings.REDIS_URL
    limits.redis_retry_now()
    limits.forget_all()
    yield configure
    settings.REDIS_URL = redis_url  # a test may have pointed it at a dead port
    limits.redis_retry_now()
    limits.forget_all()
