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
    """One rate per API key, config().rate_limits.<rate_name>, read at each request (tests change it)."""

    rate_name = "api_key"

    def rate_name_for(self, request, view) -> str | None:
        """Which rate this request counts against; None when this throttle does not apply."""
        return self.rate_name

    def allow_request(self, request, view) -> bool:
        self.retry_after = None
        api_key = getattr(request.user, "api_key", None)
        if api_key is None:  # not an agent's request: the address limit applies at authentication
            return True
        self.retry_after = api_key_request_counted(api_key.pk, self.rate_name_for(request, view))
        return self.retry_after is None

    def wait(self) -> float | None:
        return self.retry_after


class ApiKeyBurstThrottle(ApiKeyThrottle):
    rate_name = "api_key_burst"


class ApiKeyScopeThrottle(ApiKeyThrottle):
    """The heavier requests' own rate (config().rate_limits.search, .batch), named by the view."""

    def rate_name_for(self, request, view) -> str | None:
        scope_for = getattr(view, "rate_limit_scope_for", None)
        return scope_for(request) if scope_for else None


def api_key_request_counted(api_key_id, rate_name: str | None) -> int | None:
    """Count one request of this key against config().rate_limits.<rate_name>: the seconds to
    wait when the key is over it, None when it may go on (also when the rate is off, or Redis
    is down). Every door that takes a key counts its requests here."""
    rate = rate_limits.configured_rate(rate_name) if rate_name else None
    if rate is None:
        return None
    count = rate_limits.hit(rate_limits.key("api_key", str(api_key_id), rate_name), window_seconds=rate.seconds)
    if count is None or count.hits <= rate.requests:  # None: Redis is down, serve the request
        return None
    return count.retry_after


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
