"""The pieces of memory_platform.rate_limits that need no server: rates, addresses, the check."""

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.test import RequestFactory

from memory_platform import rate_limits
from memory_platform.rate_limits import Rate
from tests.knobs import with_rate_limits


@pytest.mark.parametrize(("text", "rate"), [
    ("600/min", Rate(600, 60)), ("50/s", Rate(50, 1)), ("20/10s", Rate(20, 10)), ("5/15min", Rate(5, 900)),
    ("1000/hour", Rate(1000, 3600)), ("3/2hours", Rate(3, 7200)), (" 10 / day ", Rate(10, 86400)),
    ("off", None), ("", None), ("0", None),
])
def test_rates_are_written_as_requests_per_window(text, rate):
    assert Rate.parse(text) == rate


@pytest.mark.parametrize("text", ["600", "600/fortnight", "many/min", "10/0s", "-1/min"])
def test_a_mistyped_rate_is_refused(text):
    with pytest.raises(ImproperlyConfigured):
        Rate.parse(text)


def test_the_system_check_names_a_mistyped_rate(settings):
    settings.MEMORY_PLATFORM = with_rate_limits(settings.MEMORY_PLATFORM, SEARCH="300 per minute")
    errors = rate_limits.rate_limit_settings(None)
    assert [error.id for error in errors] == ["memory_platform.E001"]
    assert "MEMORY_PLATFORM_RATE_LIMIT_SEARCH" in errors[0].msg


@pytest.mark.parametrize(("proxies", "forwarded", "address"), [
    (0, "", "10.0.0.1"),
    (0, "198.51.100.1", "10.0.0.1"),  # not trusted: any client can write it
    (1, "", "10.0.0.1"),
    (1, "203.0.113.5, 198.51.100.1", "198.51.100.1"),  # what the one proxy saw
    (2, "203.0.113.5, 198.51.100.1", "203.0.113.5"),
    (3, "198.51.100.1", "198.51.100.1"),
])
def test_the_client_address_trusts_only_configured_proxies(settings, proxies, forwarded, address):
    settings.MEMORY_PLATFORM = with_rate_limits(settings.MEMORY_PLATFORM, TRUSTED_PROXIES=proxies)
    extra = {"HTTP_X_FORWARDED_FOR": forwarded} if forwarded else {}
    request = RequestFactory().get("/", REMOTE_ADDR="10.0.0.1", **extra)
    assert rate_limits.client_address(request) == address
