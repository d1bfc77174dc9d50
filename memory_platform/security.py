"""What the served app adds to Django's own security settings (settings/production.py)."""

from __future__ import annotations

import functools
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


Networks = tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]


@functools.lru_cache(maxsize=8)
def proxy_networks(text: str) -> Networks:
    """"10.0.0.5, 10.1.0.0/16, ::1" as networks; ValueError naming an entry that is neither an
    address nor a network."""
    networks = []
    for entry in (part.strip() for part in text.split(",")):
        if entry:
            try:
                networks.append(ipaddress.ip_network(entry, strict=False))
            except ValueError:
                raise ValueError(f"{entry!r} is not an IP address or network") from None
    return tuple(networks)


def _address(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """An X-Forwarded-For entry as an address: bare, "[v6]" or with a port; None if it is not one."""
    text = text.strip()
    if text.startswith("["):
        text = text[1:text.find("]")] if "]" in text else ""
    elif text.count(":") == 1:
        text = text.split(":")[0]
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None


def is_among(address: str, networks: Networks) -> bool:
    parsed = _address(address)
    return parsed is not None and any(parsed in network for network in networks)


def client_address(peer: str, forwarded_for: str, proxies: Networks) -> str:
    """Who sent a request: the connection's peer, unless the peer is one of `proxies`; then the
    X-Forwarded-For entry its proxies appended last that is not itself one of them, when it is a
    valid address (otherwise the nearest proxy). Any client can write X-Forwarded-For: without
    a configured proxy it is never read, and a value that is no address is never taken.
    Applied to its own answer (with the same header) it gives the same answer."""
    if not is_among(peer, proxies):
        return peer
    nearest = peer
    for entry in reversed(forwarded_for.split(",") if forwarded_for else []):
        address = _address(entry)
        if address is None:
            break
        if not is_among(str(address), proxies):
            return str(address)
        nearest = str(address)
    return nearest


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
