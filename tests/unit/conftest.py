"""tests/unit holds the tests that need no server: no database, no Redis, no embedding model.
They run in seconds (`scripts/test tests/unit`). A test here that asks for a server fails at
collection, so the folder stays what it says."""

import pytest

SERVERS = {"db", "transactional_db", "django_db_setup", "embedded_servers", "live_server", "client", "admin_client"}


def pytest_collection_modifyitems(config, items):
    for item in items:
        if "tests/unit/" not in item.nodeid.replace("\\", "/") and not item.nodeid.startswith("unit/"):
            continue
        wanted = SERVERS & set(getattr(item, "fixturenames", ()))
        if wanted or item.get_closest_marker("django_db"):
            raise pytest.UsageError(f"{item.nodeid} needs a server ({', '.join(sorted(wanted)) or 'django_db'}): "
                                    "it belongs outside tests/unit")
