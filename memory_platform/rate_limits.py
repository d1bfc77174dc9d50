"""Counters in Redis for rate limits and sign-in lockouts, failing open.

Every limit is a fixed window: the first hit creates a counter that expires with the window,
each hit increments it, in one round trip (SET NX EX, INCR, TTL in a MULTI), so concurrent
requests of gunicorn's workers never lose a count. A limit protects the service; it is not
the record of anything: when Redis is unreachable every check allows the request, and after
one failure this process stops asking Redis for REDIS_RETRY_SECONDS, so an outage costs one
timeout per process and window, not one per request.

The rates are config().rate_limits (docs/security.md, "Rate limits").
"""

from __future__ import annotations

import hashlib
import logging
import math
import os
import re
import time
from dataclasses import dataclass
from functools import lru_cache

import redis
from django.conf import settings
from django.core.checks import Error, register
from django.core.exceptions import ImproperlyConfigured

from memory_platform import security
from memory_platform.config import config
from memory_platform.config import problem as config_problem

logger = logging.getLogger(__name__)

KEY_PREFIX = "rate_limits:"
RATE_PATTERN = re.compile(
    r"^\s*(?P<requests>\d+)\s*/\s*(?P<count>\d*)\s*(?P<unit>s|sec|second|m|min|minute|h|hour|d|day)s?\s*$")
UNIT_SECONDS = {"s": 1, "sec": 1, "second": 1, "m": 60, "min": 60, "minute": 60, "h": 3600, "hour": 3600,
                "d": 86400, "day": 86400}
DISABLED = {"", "0", "off", "none"}


@dataclass(frozen=True)
class Rate:
    """At most `requests` in a window of `seconds`."""

    requests: int
    seconds: int

    @classmethod
    def parse(cls, text: str) -> Rate | None:
        """"600/min", "50/s", "20/10s", "5/15min"; None for "" / "0" / "off" (no limit)."""
        if str(text).strip().lower() in DISABLED:
            return None
        match = RATE_PATTERN.match(str(text).lower())
        if not match:
            raise ImproperlyConfigured(f"not a rate: {text!r} (write it as 600/min, 50/s or 20/10s)")
        seconds = int(match["count"] or 1) * UNIT_SECONDS[match["unit"]]
        if seconds < 1:
            raise ImproperlyConfigured(f"not a rate: {text!r} (the window must be at least one second)")
        return cls(requests=int(match["requests"]), seconds=seconds)


def configured_rate(name: str) -> Rate | None:
    """The rate config().rate_limits holds as `name` ("api_key", "search"...); None when off."""
    return Rate.parse(getattr(config().rate_limits, name))


RATE_NAMES = ("api_key", "api_key_burst", "search", "batch", "unauthenticated")


@register()
def rate_limit_settings(app_configs, **kwargs) -> list[Error]:
    """A mistyped rate is stopped at start (`manage.py check`, `run`), not at every request."""
    if config_problem():
        return []  # a setting of the wrong type or shape: memories.checks.configuration says which
    errors = []
    for name in RATE_NAMES:
        try:
            configured_rate(name)
        except ImproperlyConfigured as exc:
            errors.append(Error(f"MEMORY_PLATFORM_RATE_LIMIT_{name.upper()}: {exc}", id="memory_platform.E001"))
    return errors


@dataclass(frozen=True)
class Count:
    """One window's counter after a hit: how many so far and when the window ends."""

    hits: int
    retry_after: int  # seconds until the window ends, at least 1


# --------------------------------------------------------------------------- Redis, failing open

_redis_down_until = 0.0  # monotonic time before which this process does not ask Redis


@lru_cache(maxsize=4)
def _client(url: str) -> redis.Redis:
    # Short timeouts: a limit must never make a request slow; the breaker does the rest.
    return redis.Redis.from_url(url, socket_connect_timeout=0.5, socket_timeout=0.5)


def client() -> redis.Redis | None:
    """The Redis the counters live in, or None while it is known to be unreachable."""
    if time.monotonic() < _redis_down_until:
        return None
    return _client(settings.REDIS_URL)


def _redis_failed(exc: Exception) -> None:
    global _redis_down_until
    retry = config().rate_limits.redis_retry_seconds
    _redis_down_until = time.monotonic() + retry
    logger.warning("rate limits and sign-in lockouts are off for %s s: Redis is unreachable (%s)",
                   retry, type(exc).__name__)


def redis_retry_now() -> None:
    """Forget a Redis failure: the next check asks Redis again (tests; after an outage)."""
    global _redis_down_until
    _redis_down_until = 0.0


def _run(build) -> list | None:
    """Run the commands `build(pipeline)` queues as one transaction; None if Redis failed."""
    connection = client()
    if connection is None:
        return None
    try:
        with connection.pipeline(transaction=True) as pipeline:
            build(pipeline)
            return pipeline.execute()
    except redis.RedisError as exc:
        _redis_failed(exc)
        return None


# --------------------------------------------------------------------------- counters


def key(*parts: str) -> str:
    return KEY_PREFIX + ":".join(parts)


def hidden(value: str) -> str:
    """A typed value (a username, perhaps a password typed in the wrong box) as a digest:
    Redis needs to tell values apart, not to read them."""
    return hashlib.sha256(value.encode()).hexdigest()[:32]


def hit(counter: str, *, window_seconds: int) -> Count | None:
    """Count one hit in the counter's current window; None when Redis is unreachable."""
    counts = hit_each({counter: window_seconds})
    return None if counts is None else counts[counter]


def hit_each(windows: dict[str, int]) -> dict[str, Count] | None:
    """Count one hit in each counter's current window (counter -> its window in seconds), all
    in one round trip; None when Redis is unreachable."""

    def build(pipeline):
        for counter, window_seconds in windows.items():
            pipeline.set(counter, 0, ex=window_seconds, nx=True)
            pipeline.incr(counter)
            pipeline.pttl(counter)

    replies = _run(build)
    if replies is None:
        return None
    return {counter: Count(hits=int(replies[3 * i + 1]), retry_after=_seconds(replies[3 * i + 2]))
            for i, counter in enumerate(windows)}


def peek(counter: str) -> Count | None:
    """The counter as it stands, without counting; None when absent or Redis is unreachable."""

    def build(pipeline):
        pipeline.get(counter)
        pipeline.pttl(counter)

    replies = _run(build)
    if replies is None or replies[0] is None:
        return None
    return Count(hits=int(replies[0]), retry_after=_seconds(replies[1]))


def _seconds(milliseconds: int) -> int:
    """A counter's time to live as whole seconds to wait, rounded up: Retry-After must not be
    early. (PTTL is negative for a counter without expiry, which these never are.)"""
    return max(math.ceil(int(milliseconds) / 1000), 1)


def extend(counter: str, seconds: int) -> None:
    """Keep the counter (and so a lockout) for `seconds` from now."""
    _run(lambda pipeline: pipeline.expire(counter, seconds))


def undo(counter: str) -> None:
    """Take one hit back (an attempt counted before it was known to be harmless)."""
    _run(lambda pipeline: pipeline.decr(counter))


def forget(*counters: str) -> None:
    _run(lambda pipeline: pipeline.delete(*counters))


def forget_all() -> int:
    """Delete every counter (tests; an operator clearing all lockouts at once)."""
    connection = client()
    if connection is None:
        return 0
    try:
        names = list(connection.scan_iter(match=KEY_PREFIX + "*", count=1000))
        return connection.delete(*names) if names else 0
    except redis.RedisError as exc:
        _redis_failed(exc)
        return 0


# --------------------------------------------------------------------------- the client's address


def client_address(request) -> str:
    """Who sent the request, as far as can be trusted: REMOTE_ADDR, or behind the configured
    proxies the address they saw (memory_platform.security.client_address)."""
    return security.client_address(request.META.get("REMOTE_ADDR", "") or "unknown",
                                   request.META.get("HTTP_X_FORWARDED_FOR", ""),
                                   security.proxy_networks(config().proxy_addresses))


@register()
def proxy_address_settings(app_configs, **kwargs) -> list[Error]:
    """A mistyped proxy address is stopped at start; so is the count of proxies this setting
    replaced, which would otherwise leave every client behind a proxy sharing its limits."""
    if config_problem():
        return []
    errors = []
    try:
        security.proxy_networks(config().proxy_addresses)
    except ValueError as exc:
        errors.append(Error(f"MEMORY_PLATFORM_PROXY_ADDRESSES: {exc}", id="memory_platform.E002"))
    if os.environ.get("MEMORY_PLATFORM_TRUSTED_PROXIES", "0").strip() not in ("", "0"):
        errors.append(Error("MEMORY_PLATFORM_TRUSTED_PROXIES is no longer read: list the proxies' addresses in "
                            "MEMORY_PLATFORM_PROXY_ADDRESSES instead", id="memory_platform.E003"))
    return errors
