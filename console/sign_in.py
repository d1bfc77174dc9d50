"""Sign-in lockout for the console and admin: too many wrong passwords pause sign-in.

Wrong passwords are counted per username and per client address in Redis
(memory_platform.rate_limits). Past SIGN_IN_FAILURES_PER_USERNAME for a username, or
SIGN_IN_FAILURES_PER_ADDRESS from an address, within SIGN_IN_WINDOW_SECONDS, every attempt
for it is refused for SIGN_IN_LOCKOUT_SECONDS, the right password too, and without checking
the password at all: a locked username that exists and one that does not look the same.
With Redis unreachable nobody is locked out.

Not django-axes: its cache handler counts with a read then a write (concurrent failures are
lost) and lets a Redis error through, so sign-in would fail with Redis down.
"""

from __future__ import annotations

import math

from django import forms
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth.forms import AuthenticationForm
from django.contrib.auth.views import LoginView

from memory_platform import rate_limits
from memory_platform.config import config


def _counters(username: str, address: str) -> list[tuple[str, str]]:
    """(counter, the config().rate_limits field holding its limit) for this attempt."""
    counters = [(rate_limits.key("sign_in", "address", address), "sign_in_failures_per_address")]
    if username:
        # Usernames compare case-insensitively here, so "Alice" and "alice" share one lockout.
        name = rate_limits.hidden(username.strip().casefold())
        counters.append((rate_limits.key("sign_in", "username", name), "sign_in_failures_per_username"))
    return counters


def _limit(name: str) -> int:
    return getattr(config().rate_limits, name)


def sign_in_locked_for(*, username: str, address: str) -> int:
    """Seconds until sign-in for this username from this address is allowed again; 0 if it is."""
    waits = []
    for counter, limit_name in _counters(username, address):
        count = rate_limits.peek(counter)
        if count is not None and count.hits >= _limit(limit_name):
            waits.append(count.retry_after)
    return max(waits, default=0)


class SignInAttempt:
    """One attempt, counted before its password is checked: guesses sent at once cannot all
    pass a limit they would only reach together. A right password takes its count back."""

    def __init__(self, *, username: str, address: str):
        window = config().rate_limits.sign_in_window_seconds
        self.counts = [(counter, limit_name, rate_limits.hit(counter, window_seconds=window))
                       for counter, limit_name in _counters(username, address)]
        # Over a limit (the attempts before this one used it up): refused unchecked.
        self.locked_for = max((count.retry_after for _, limit_name, count in self.counts
                               if count is not None and count.hits > _limit(limit_name)),
                              default=0)

    def failed(self) -> None:
        """A wrong password: the one that reaches a limit starts that counter's lockout."""
        lockout = config().rate_limits.sign_in_lockout_seconds
        for counter, limit_name, count in self.counts:
            if count is not None and count.hits >= _limit(limit_name):
                rate_limits.extend(counter, lockout)

    def succeeded(self) -> None:
        """A right password clears the username's failures; of the address's it takes back this
        attempt only (one account known to an attacker must not reset their guesses at others)."""
        for counter, limit_name, count in self.counts:
            if limit_name == "sign_in_failures_per_username":
                rate_limits.forget(counter)
            elif count is not None:
                rate_limits.undo(counter)


class LockoutMixin:
    """For an AuthenticationForm: refuse while locked, count wrong passwords."""

    locked_message = ("Too many failed sign-in attempts. Sign-in is paused; try again in %(minutes)s "
                      "minute(s).")

    def clean(self):
        self.locked_for = 0
        username = self.cleaned_data.get("username") or ""
        address = rate_limits.client_address(self.request)
        self.locked_for = sign_in_locked_for(username=username, address=address)
        if self.locked_for:
            raise self.locked_out_error()
        if not username or not self.cleaned_data.get("password"):
            return super().clean()  # the field errors say what is missing; nothing was tried
        attempt = SignInAttempt(username=username, address=address)
        if attempt.locked_for:
            self.locked_for = attempt.locked_for
            raise self.locked_out_error()
        try:
            cleaned = super().clean()
        except forms.ValidationError:
            attempt.failed()
            self.locked_for = sign_in_locked_for(username=username, address=address)
            if self.locked_for:
                raise self.locked_out_error() from None
            raise
        attempt.succeeded()
        return cleaned

    def locked_out_error(self) -> forms.ValidationError:
        return forms.ValidationError(self.locked_message, code="locked_out",
                                     params={"minutes": max(math.ceil(self.locked_for / 60), 1)})


class SignInForm(LockoutMixin, AuthenticationForm):
    pass


class AdminSignInForm(LockoutMixin, AdminAuthenticationForm):
    pass


class SignInView(LoginView):
    """The console's sign-in page; a locked-out attempt is answered 429 with Retry-After."""

    form_class = SignInForm
    template_name = "console/sign_in.html"
    redirect_authenticated_user = True

    def form_invalid(self, form):
        response = super().form_invalid(form)
        if getattr(form, "locked_for", 0):
            response.status_code = 429
            response["Retry-After"] = str(form.locked_for)
        return response
