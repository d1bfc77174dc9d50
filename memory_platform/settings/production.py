"""Settings of the served app: what `manage.py run` (so `scripts/run`) serves, and the WSGI
default. Safe without any configuration; the environment overrides each default.

- DEBUG only with DJANGO_DEBUG=true.
- SECRET_KEY from DJANGO_SECRET_KEY, else generated once into the data folder (mode 0600).
- ALLOWED_HOSTS from DJANGO_ALLOWED_HOSTS, else the loopback names and the host of
  MEMORY_PLATFORM_BIND (what --bind says; `manage.py run` passes it on).
- Session and CSRF cookies Secure on https requests (memory_platform.security), always with
  DJANGO_SECURE_COOKIES=true; HSTS on https responses.
"""

from memory_platform import local_services, security
from memory_platform.secret_key import secret_key
from memory_platform.settings.base import *  # noqa: F403
from memory_platform.settings.base import env

DEBUG = env.bool("DJANGO_DEBUG", default=False)
SECRET_KEY = env("DJANGO_SECRET_KEY", default="") or secret_key(local_services.data_dir())
ALLOWED_HOSTS = env.list(
    "DJANGO_ALLOWED_HOSTS",
    default=security.allowed_hosts_for(env("MEMORY_PLATFORM_BIND", default="127.0.0.1:8000")),
)
SESSION_COOKIE_SECURE = env.bool("DJANGO_SECURE_COOKIES", default=False)
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
SESSION_COOKIE_HTTPONLY = True
# Sent by SecurityMiddleware on https responses only (a browser ignores it over http anyway).
SECURE_HSTS_SECONDS = env.int("DJANGO_HSTS_SECONDS", default=31536000)
# https is recognised by gunicorn: X-Forwarded-Proto counts only from FORWARDED_ALLOW_IPS
# (gunicorn's setting, default 127.0.0.1), so no SECURE_PROXY_SSL_HEADER, which would trust
# the header from any client.
