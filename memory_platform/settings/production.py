"""Production settings: everything secret or host-specific must come from the environment."""

from memory_platform.settings.base import *  # noqa: F403
from memory_platform.settings.base import env

DEBUG = False
SECRET_KEY = env("DJANGO_SECRET_KEY")  # no default: refuse to start without one
ALLOWED_HOSTS = env.list("DJANGO_ALLOWED_HOSTS")
SESSION_COOKIE_SECURE = env.bool("DJANGO_SECURE_COOKIES", default=True)
CSRF_COOKIE_SECURE = env.bool("DJANGO_SECURE_COOKIES", default=True)
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_CONTENT_TYPE_NOSNIFF = True
