"""What the served app's settings rest on, tested without servers: the kept secret, the hosts
and URLs derived from --bind, cookies marked Secure on https only, passwords kept out of logs."""

import logging
import os
import stat
import threading

import pytest
from django.http import HttpResponse
from django.test import RequestFactory

from memory_platform import security
from memory_platform.secret_key import secret_key


def test_the_secret_key_is_made_once_with_mode_0600_and_reused(tmp_path):
    folder = tmp_path / "data"
    key = secret_key(folder)
    path = folder / "secret_key"
    assert len(key) >= 50
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert secret_key(folder) == key
    assert sorted(p.name for p in folder.iterdir()) == ["secret_key"]  # no temporary file left


def test_processes_starting_together_agree_on_one_key(tmp_path):
    keys = []
    threads = [threading.Thread(target=lambda: keys.append(secret_key(tmp_path))) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(set(keys)) == 1 and len(keys) == 8


def test_a_damaged_key_file_is_refused_not_used(tmp_path):
    (tmp_path / "secret_key").write_text("short\n")
    with pytest.raises(ValueError, match="no usable secret key"):
        secret_key(tmp_path)


@pytest.mark.parametrize(("bind", "extra"), [
    ("127.0.0.1:8000", []),
    ("0.0.0.0:8000", []),
    ("[::]:8000", []),
    ("10.1.2.3:8080", ["10.1.2.3"]),
    ("[fe80::1]:8000", ["[fe80::1]"]),
    ("memory.internal:80", ["memory.internal"]),
    ("unix:/run/memory.sock", []),
])
def test_allowed_hosts_are_the_loopback_names_and_the_bound_address(bind, extra):
    assert security.allowed_hosts_for(bind) == ["localhost", "127.0.0.1", "[::1]", *extra]


@pytest.mark.parametrize(("bind", "url"), [
    ("127.0.0.1:8000", "http://127.0.0.1:8000"),
    ("127.0.0.1:9123", "http://127.0.0.1:9123"),
    ("0.0.0.0:9001", "http://127.0.0.1:9001"),
    ("[::]:8080", "http://[::1]:8080"),
    ("[::1]:8081", "http://[::1]:8081"),
    ("10.1.2.3", "http://10.1.2.3:8000"),
    ("memory.internal:80", "http://memory.internal:80"),
])
def test_the_base_url_is_where_the_bind_serves(bind, url):
    assert security.base_url(bind) == url


def _cookie_response(request):
    response = HttpResponse()
    response.set_cookie("sessionid", "s")
    response.set_cookie("csrftoken", "c")
    response.set_cookie("other", "o")
    return response


@pytest.mark.parametrize("secure", [True, False])
def test_session_and_csrf_cookies_are_secure_exactly_on_https(secure, settings):
    settings.SESSION_COOKIE_NAME, settings.CSRF_COOKIE_NAME = "sessionid", "csrftoken"
    request = RequestFactory().get("/", secure=secure)
    response = security.SecureCookiesOnHttpsMiddleware(_cookie_response)(request)
    assert bool(response.cookies["sessionid"]["secure"]) is secure
    assert bool(response.cookies["csrftoken"]["secure"]) is secure
    assert not response.cookies["other"]["secure"]


def test_log_lines_never_carry_a_url_password():
    record = logging.LogRecord("x", logging.ERROR, __file__, 1, "cannot reach %s or %s", (
        "postgres://memory_app:hunter2@db:5432/memory_platform", "redis://:s3cret@cache:6379/0"), None)
    security.HideUrlPasswordsFilter().filter(record)
    message = record.getMessage()
    assert "hunter2" not in message and "s3cret" not in message
    assert "postgres://memory_app:***@db:5432/memory_platform" in message and "redis://:***@cache" in message


def _served_settings(**env) -> dict:
    """Import memory_platform.settings.production in a fresh interpreter (pointed at the test
    servers, so it starts nothing) and report what it decided."""
    import json
    import subprocess
    import sys

    from django.conf import settings

    script = ("import json; from memory_platform.settings import production as p; print(json.dumps("
              "{'DEBUG': p.DEBUG, 'SECRET_KEY': p.SECRET_KEY, 'ALLOWED_HOSTS': p.ALLOWED_HOSTS, "
              "'SESSION_COOKIE_SECURE': p.SESSION_COOKIE_SECURE, 'HSTS': p.SECURE_HSTS_SECONDS}))")
    base = {key: value for key, value in os.environ.items() if not key.startswith("DJANGO_")
            and key != "MEMORY_PLATFORM_BIND"}
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=settings.BASE_DIR, capture_output=True, text=True, timeout=60,
        env={**base, "DATABASE_URL": settings.DATABASE_URL, "REDIS_URL": settings.REDIS_URL, **env},
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_served_settings_are_safe_without_any_configuration(tmp_path):
    served = _served_settings(MEMORY_PLATFORM_DATA_DIR=str(tmp_path), MEMORY_PLATFORM_BIND="10.0.0.7:8000")
    assert served["DEBUG"] is False
    assert served["SECRET_KEY"] == (tmp_path / "secret_key").read_text().strip()
    assert "insecure" not in served["SECRET_KEY"]
    assert served["ALLOWED_HOSTS"] == ["localhost", "127.0.0.1", "[::1]", "10.0.0.7"]
    assert served["SESSION_COOKIE_SECURE"] is False  # Secure per request, on https (the middleware)
    assert served["HSTS"] >= 31536000


def test_served_settings_follow_the_environment(tmp_path):
    served = _served_settings(MEMORY_PLATFORM_DATA_DIR=str(tmp_path), DJANGO_DEBUG="true",
                              DJANGO_SECRET_KEY="k" * 60, DJANGO_ALLOWED_HOSTS="memory.example.com",
                              DJANGO_SECURE_COOKIES="true")
    assert served["DEBUG"] is True and served["SECRET_KEY"] == "k" * 60
    assert served["ALLOWED_HOSTS"] == ["memory.example.com"] and served["SESSION_COOKIE_SECURE"] is True
    assert not (tmp_path / "secret_key").exists()
