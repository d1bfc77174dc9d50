"""What the served app adds to Django's own security settings (settings/production.py)."""

from __future__ import annotations

import ipaddress
import logging
import re

from django.conf import settings

LOCAL_HOSTS = ["localhost", "127.0.0.1", "[::1]"]


DEFAULT_BIND = "127.0.0.1:8000"


def base_url(bind: str) -> str:
    """The URL a browser on this machine opens for what gunicorn serves at `bind` (its --bind:
    HOST, HOST:PORT, [IPv6]:PORT, unix:PATH). A wildcard address is reached on loopback."""
    if bind.startswith(("unix:", "fd://")):
        return f"http+{bind}"  # not a browser URL: say what it is rather than invent one
    host, port = (bind.rsplit(":", 1) if bind.rsplit(":", 1)[-1].isdigit() and ":" in bind
                  else (bind, "8000"))  # gunicorn's port when --bind names none
    host = host or "127.0.0.1"
    try:
        address = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return f"http://{host}:{port}"
    if address.is_unspecified:
        address = ipaddress.ip_address("::1" if address.version == 6 else "127.0.0.1")
    return f"http://[{address}]:{port}" if address.version == 6 else f"http://{address}:{port}"


def allowed_hosts_for(bind: str) -> list[str]:
    """The hosts a local run answers to: the loopback names, plus the host --bind names
    (unless it is a wildcard address, which names no host, or a Unix socket)."""
    if bind.startswith(("unix:", "fd://")):
        return list(LOCAL_HOSTS)
    host = bind.rsplit(":", 1)[0] if bind.rsplit(":", 1)[-1].isdigit() else bind
    try:
        address = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        named = host.lower()  # a host name
    else:
        named = "" if address.is_unspecified else f"[{address}]" if address.version == 6 else str(address)
    return list(LOCAL_HOSTS) + ([named] if named and named not in LOCAL_HOSTS else [])


class SecureCookiesOnHttpsMiddleware:
    """Marks the session and CSRF cookies Secure on requests that came over https (directly,
    or through a proxy gunicorn trusts: X-Forwarded-Proto from FORWARDED_ALLOW_IPS), so the
    same run serves a browser over plain http on 127.0.0.1 and over TLS behind a proxy.
    DJANGO_SECURE_COOKIES=true makes them Secure always (SESSION_COOKIE_SECURE)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if request.is_secure():
            for name in (settings.SESSION_COOKIE_NAME, settings.CSRF_COOKIE_NAME):
                if name in response.cookies:
                    response.cookies[name]["secure"] = True
        return response


_URL_PASSWORD = re.compile(r"(?P<scheme>[a-z][a-z0-9+.-]*://)(?P<user>[^:/@\s]*):(?P<password>[^@/\s]+)@",
                           re.IGNORECASE)


def hide_url_passwords(text: str) -> str:
    """scheme://user:password@host... becomes scheme://user:***@host..."""
    return _URL_PASSWORD.sub(lambda m: f"{m['scheme']}{m['user']}:***@", text)


class HideUrlPasswordsFilter(logging.Filter):
    """A logging filter: no log line carries the password of a database or Redis URL."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        hidden = hide_url_passwords(message)
        if hidden != message:
            record.msg, record.args = hidden, None
        return True
