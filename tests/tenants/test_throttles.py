"""Rate limits of the agent API, against the real Redis: per key, per scope, per address."""

import time

import pytest
from rest_framework.test import APIClient

pytestmark = pytest.mark.django_db

DEAD_REDIS = "redis://127.0.0.1:1/0"  # nothing listens on port 1


def assert_rate_limited(response):
    assert response.status_code == 429
    assert int(response["Retry-After"]) >= 1
    body = response.json()
    assert body == {"error": {"code": "rate_limited", "message": body["error"]["message"], "fields": {}}}
    assert "Retry after" in body["error"]["message"]
    return body["error"]["message"]


def test_the_request_past_a_keys_rate_gets_429_with_retry_after(rate_limits, api_a):
    rate_limits(API_KEY="3/min")
    for _ in range(3):
        assert api_a.get("/api/v1/memories").status_code == 200
    response = api_a.get("/api/v1/memories")
    message = assert_rate_limited(response)
    assert message.startswith("Too many requests for this API key.")
    assert 55 <= int(response["Retry-After"]) <= 60  # the window opened by the first request, just now


def test_another_key_of_the_same_organisation_is_not_affected(rate_limits, tenant_a, api_a, api_client_for):
    rate_limits(API_KEY="2/min")
    other = api_client_for(tenant_a.agent)
    for _ in range(2):
        api_a.get("/api/v1/memories")
    assert api_a.get("/api/v1/memories").status_code == 429
    assert other.get("/api/v1/memories").status_code == 200


def test_the_burst_rate_caps_a_keys_requests_within_its_window(rate_limits, api_a):
    rate_limits(API_KEY="1000/min", API_KEY_BURST="2/10s")
    assert [api_a.get("/api/v1/memories").status_code for _ in range(3)] == [200, 200, 429]


def test_searches_count_against_their_own_rate_as_well(rate_limits, api_a):
    rate_limits(SEARCH="2/min")
    for _ in range(2):
        assert api_a.post("/api/v1/search", {"query": "tea"}).status_code == 200
    assert_rate_limited(api_a.post("/api/v1/search", {"query": "tea"}))
    assert api_a.post("/api/v1/retrieve", {"query": "tea"}).status_code == 429  # one scope for both
    assert api_a.get("/api/v1/memories").status_code == 200  # other requests go on


def test_over_two_rates_at_once_the_wait_is_the_longer_one(rate_limits, api_a):
    rate_limits(API_KEY="2/min", SEARCH="2/10s")
    for _ in range(2):
        assert api_a.post("/api/v1/search", {"query": "tea"}).status_code == 200
    response = api_a.post("/api/v1/search", {"query": "tea"})
    assert_rate_limited(response)
    assert 50 <= int(response["Retry-After"]) <= 60  # the key's minute, not the search scope's 10 s


def test_batch_creates_count_against_their_own_rate_single_creates_do_not(rate_limits, api_a):
    rate_limits(BATCH="1/min")
    batch = {"memories": [{"content": "The user likes green tea"}]}
    assert api_a.post("/api/v1/memories", batch).status_code in (200, 201)
    assert_rate_limited(api_a.post("/api/v1/memories", {"memories": [{"content": "The user likes oolong"}]}))
    assert api_a.post("/api/v1/memories", {"content": "The user likes black tea"}).status_code == 201


def test_the_limit_resets_when_its_window_ends(rate_limits, api_a):
    rate_limits(API_KEY="2/2s")
    api_a.get("/api/v1/memories")
    api_a.get("/api/v1/memories")
    refused = api_a.get("/api/v1/memories")
    assert refused.status_code == 429
    time.sleep(int(refused["Retry-After"]))
    assert api_a.get("/api/v1/memories").status_code == 200


def test_bad_keys_from_one_address_get_429_after_the_unauthenticated_rate(rate_limits, tenant_a, api_a):
    rate_limits(UNAUTHENTICATED="5/min")
    statuses = []
    for attempt in range(8):
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer mp_guess-{attempt}")
        statuses.append(client.get("/api/v1/memories").status_code)
    assert statuses == [401] * 5 + [429] * 3
    response = APIClient().get("/api/v1/memories")  # no key at all counts too
    assert_rate_limited(response)
    assert "without a valid API key from 127.0.0.1" in response.json()["error"]["message"]
    # A valid key from the same address is served: one broken agent does not stop the others.
    assert api_a.get("/api/v1/memories").status_code == 200
    # Another address is counted apart.
    assert APIClient(REMOTE_ADDR="192.0.2.7").get("/api/v1/memories").status_code == 401


def test_x_forwarded_for_is_not_trusted_unless_proxies_are_configured(rate_limits, tenant_a):
    rate_limits(UNAUTHENTICATED="2/min")
    statuses = [APIClient(HTTP_X_FORWARDED_FOR=f"198.51.100.{n}").get("/api/v1/memories").status_code
                for n in range(3)]
    assert statuses == [401, 401, 429]  # a client writing a new X-Forwarded-For each time is still one address


def test_behind_a_trusted_proxy_the_forwarded_address_is_counted(rate_limits, settings, tenant_a):
    rate_limits(UNAUTHENTICATED="2/min")
    settings.MEMORY_PLATFORM = {**settings.MEMORY_PLATFORM, "PROXY_ADDRESSES": "10.0.0.1"}
    proxy = {"REMOTE_ADDR": "10.0.0.1"}
    for _ in range(2):
        APIClient(HTTP_X_FORWARDED_FOR="spoofed, 198.51.100.1", **proxy).get("/api/v1/memories")
    assert APIClient(HTTP_X_FORWARDED_FOR="198.51.100.1", **proxy).get("/api/v1/memories").status_code == 429
    assert APIClient(HTTP_X_FORWARDED_FOR="198.51.100.2", **proxy).get("/api/v1/memories").status_code == 401


def test_with_redis_unreachable_requests_are_served_and_redis_is_not_asked_again(rate_limits, settings, api_a):
    from memory_platform import rate_limits as limits

    rate_limits(API_KEY="1/min", UNAUTHENTICATED="1/min")
    settings.REDIS_URL = DEAD_REDIS
    assert [api_a.get("/api/v1/memories").status_code for _ in range(3)] == [200, 200, 200]
    assert [APIClient().get("/api/v1/memories").status_code for _ in range(3)] == [401, 401, 401]
    assert limits.client() is None  # the breaker is open: no request waits on a dead Redis
    started = time.monotonic()
    for _ in range(5):
        api_a.get("/api/v1/memories")
    assert time.monotonic() - started < 5  # generous: what matters is no connect timeout per request


def test_after_the_retry_interval_redis_is_asked_again(rate_limits, settings, api_a):
    from memory_platform import rate_limits as limits

    rate_limits(API_KEY="1/min", REDIS_RETRY_SECONDS=0)
    real = settings.REDIS_URL
    settings.REDIS_URL = DEAD_REDIS
    assert api_a.get("/api/v1/memories").status_code == 200
    settings.REDIS_URL = real
    assert api_a.get("/api/v1/memories").status_code == 200  # counted again: the first of this window
    assert api_a.get("/api/v1/memories").status_code == 429
    assert limits.client() is not None


def test_the_schema_documents_429_on_every_operation(client):
    import yaml

    schema = yaml.safe_load(client.get("/api/schema/").content)
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            assert "429" in operation["responses"], f"{method.upper()} {path}"
            assert "Retry-After" in operation["responses"]["429"]["description"]
