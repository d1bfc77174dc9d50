"""Rate limits of the agent API (DRF throttles), counted in Redis (memory_platform.rate_limits).

Each API key has a sustained rate and a burst rate; search-like and batch requests also count
against a scope of their own (a view says which through `rate_limit_scope_for`). Requests
without a valid key are limited per client address, at authentication: DRF checks throttles
only after authentication and permissions, which would answer every bad key with a 401.
Over a limit: 429 with Retry-After and the error code `rate_limited`.

DRF's throttle machinery, not its SimpleRateThrottle: that keeps every request's time in one
cache value read and rewritten per request, so concurrent requests lose counts, and a Redis
error would answer 500.
"""

from __future__ import annotations

from rest_framework import exceptions, throttling

from memory_platform import rate_limits


class RateLimited(exceptions.Throttled):
    default_detail = "Too many requests."
    default_code = "rate_limited"
    extra_detail_singular = "Retry after {wait} second."
    extra_detail_plural = "Retry after {wait} seconds."


class ApiKeyThrottle(throttling.BaseThrottle):
    """Every rate an agent's request counts against, read at each request (tests change them):
    the key's sustained and burst rates (config().rate_limits.api_key, .api_key_burst) and the
    heavier requests' own (.search, .batch), named by the view. Counted together, in one round
    trip to Redis; over any of them, the longest wait."""

    rate_names = ("api_key_burst", "api_key")

    def allow_request(self, request, view) -> bool:
        self.retry_after = None
        api_key = getattr(request.user, "api_key", None)
        if api_key is None:  # not an agent's request: the address limit applies at authentication
            return True
        scope_for = getattr(view, "rate_limit_scope_for", None)
        scope = scope_for(request) if scope_for else None
        self.retry_after = api_key_request_counted(api_key.pk, *self.rate_names, *([scope] if scope else []))
        return self.retry_after is None

    def wait(self) -> float | None:
        return self.retry_after


def api_key_request_counted(api_key_id, *rate_names: str) -> int | None:
    """Count one request of this key against each of config().rate_limits.<rate_name>, in one
    round trip: the seconds to wait when the key is over any of them (the longest), None when
    it may go on (also when the rates are off, or Redis is down). Every door that takes a key
    counts its requests here."""
    rates = {name: rate for name in rate_names if (rate := rate_limits.configured_rate(name)) is not None}
    if not rates:
        return None
    counters = {name: rate_limits.key("api_key", str(api_key_id), name) for name in rates}
    counts = rate_limits.hit_each({counters[name]: rate.seconds for name, rate in rates.items()})
    if counts is None:  # Redis is down: serve the request
        return None
    waits = [counts[counters[name]].retry_after for name, rate in rates.items()
             if counts[counters[name]].hits > rate.requests]
    return max(waits, default=None)


def unauthenticated_request_counted(request) -> None:
    """Count a request that carried no valid API key against its client address; raise
    RateLimited (429) once the address is over config().rate_limits.unauthenticated. Valid keys from
    the same address are not refused: agents behind one NAT keep working beside a broken one."""
    rate = rate_limits.configured_rate("unauthenticated")
    if rate is None:
        return
    address = rate_limits.client_address(request)
    count = rate_limits.hit(rate_limits.key("address", address, "unauthenticated"),
                             window_seconds=rate.seconds)
    if count is not None and count.hits > rate.requests:
        raise RateLimited(wait=count.retry_after,
                          detail=f"Too many requests without a valid API key from {address}.")
