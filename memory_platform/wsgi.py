"""The WSGI app, with the served settings by default. Under `manage.py run` its processes get
the servers' URLs and start nothing; served on its own (`gunicorn memory_platform.wsgi`) with no
DATABASE_URL / REDIS_URL, it starts the embedded servers first, as manage.py does, and leaves
them running (`python -m memory_platform.local_services stop` stops them)."""

import os

from django.core.wsgi import get_wsgi_application

from memory_platform import local_services

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memory_platform.settings.production")

local_services.start_for_settings()
application = get_wsgi_application()
