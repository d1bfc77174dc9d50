"""The ASGI app `manage.py run` serves (memory_platform.serving: /mcp and the Django site on one
port), with the served settings by default. As the WSGI app, served on its own with no
DATABASE_URL / REDIS_URL it starts the embedded servers first and leaves them running."""

import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memory_platform.settings.production")

from memory_platform.wsgi import application as django_application  # noqa: E402 (starts what it needs)
from memory_platform.serving import ProductApp  # noqa: E402 (needs Django set up)

application = ProductApp(django_application)
