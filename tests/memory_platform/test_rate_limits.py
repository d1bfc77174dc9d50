"""The pieces of memory_platform.rate_limits that need no server: rates, addresses, the check."""

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.test import RequestFactory

from memory_platform import rate_limits, security
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
    ("", "", "10.0.0.1"),
    ("", "198.51.100.1", "10.0.0.1"),  # not trusted: any client can write it
    ("10.0.0.1", "", "10.0.0.1"),
    ("10.0.0.1", "203.0.113.5, 198.51.100.1", "198.51.100.1"),  # what the one proxy saw
    ("10.0.0.0/8", "203.0.113.5, 10.9.9.9", "203.0.113.5"),  # two proxies: what the outer one saw
    ("10.0.0.0/8", "10.2.2.2, 10.9.9.9", "10.2.2.2"),  # proxies all the way: the farthest
    ("10.0.0.1", "198.51.100.1:4711", "198.51.100.1"),  # a port is not part of the address
    ("10.0.0.1", "[2001:db8::7]:4711", "2001:db8::7"),
    ("10.0.0.1", "spoofed", "10.0.0.1"),  # no address: the proxy's own is the best known
    ("10.0.0.1", "<script>, 198.51.100.1", "198.51.100.1"),
    ("10.0.0.0/8", "198.51.100.1, not-an-address, 10.9.9.9", "10.9.9.9"),
    ("192.0.2.1", "198.51.100.1", "10.0.0.1"),  # another proxy's header, not ours
])
def test_the_client_address_trusts_only_configured_proxies(settings, proxies, forwarded, address):
    settings.MEMORY_PLATFORM = {**settings.MEMORY_PLATFORM, "PROXY_ADDRESSES": proxies}
    extra = {"HTTP_X_FORWARDED_FOR": forwarded} if forwarded else {}
    request = RequestFactory().get("/", REMOTE_ADDR="10.0.0.1", **extra)
    assert rate_limits.client_address(request) == address


def test_the_address_found_is_the_same_found_again_from_it():
    """The served app finds the client's address at the edge and hands it on as REMOTE_ADDR
    with the header unchanged; rate limits read it again from there."""
    proxies = security.proxy_networks("10.0.0.0/8")
    for forwarded in ("198.51.100.1, 10.9.9.9", "10.2.2.2, 10.9.9.9", "x, 10.9.9.9", "", "bad"):
        once = security.client_address("10.0.0.1", forwarded, proxies)
        assert security.client_address(once, forwarded, proxies) == once


@pytest.mark.parametrize("text", ["10.0.0.300", "proxy.example", "10.0.0.0/33"])
def test_a_mistyped_proxy_address_is_stopped_by_the_system_check(settings, text):
    settings.MEMORY_PLATFORM = {**settings.MEMORY_PLATFORM, "PROXY_ADDRESSES": f"10.0.0.1, {text}"}
    errors = rate_limits.proxy_address_settings(None)
    assert [error.id for error in errors] == ["memory_platform.E002"] and repr(text) in errors[0].msg


def test_the_count_of_proxies_it_replaced_is_refused_rather_than_ignored(monkeypatch):
    monkeypatch.setenv("MEMORY_PLATFORM_TRUSTED_PROXIES", "1")
    assert [error.id for error in rate_limits.proxy_address_settings(None)] == ["memory_platform.E003"]
