"""Sign-in lockout (console and admin), against the real Redis."""

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from tests.console.conftest import operator

pytestmark = pytest.mark.django_db

PASSWORD = "a-long-password"
LOCKED = "Too many failed sign-in attempts. Sign-in is paused; try again in"
WRONG = "Please enter a correct username and password"


def sign_in(client, username, password, **extra):
    return client.post("/console/sign-in/", {"username": username, "password": password}, **extra)


def test_after_n_wrong_passwords_even_the_right_one_is_refused_with_a_clear_message(rate_limits, client, org_a):
    rate_limits(SIGN_IN_FAILURES_PER_USERNAME=3, SIGN_IN_LOCKOUT_SECONDS=600)
    user = operator(org_a, "viewer")
    for _ in range(2):
        response = sign_in(client, user.username, "wrong")
        assert response.status_code == 200 and WRONG in response.content.decode()
    third = sign_in(client, user.username, "wrong")  # the failure that reaches the limit
    assert third.status_code == 429 and LOCKED in third.content.decode()
    right = sign_in(client, user.username, PASSWORD)
    assert right.status_code == 429
    assert f"{LOCKED} 10 minute(s)." in right.content.decode()
    assert 590 <= int(right["Retry-After"]) <= 600
    assert "_auth_user_id" not in client.session
    # Another username from another address is not locked.
    other = operator(org_a, "viewer")
    assert sign_in(Client(REMOTE_ADDR="192.0.2.9"), other.username, PASSWORD).status_code == 302


def test_a_locked_username_that_does_not_exist_looks_the_same(rate_limits, org_a):
    rate_limits(SIGN_IN_FAILURES_PER_USERNAME=2)
    user = operator(org_a, "viewer")
    answers = []
    for n, username in enumerate((user.username, "nobody-here")):
        client = Client(REMOTE_ADDR=f"192.0.2.{n + 1}")
        for _ in range(2):
            sign_in(client, username, "wrong")
        response = sign_in(client, username, PASSWORD)
        page = response.content.decode()
        answers.append((response.status_code, response["Retry-After"],
                        page[page.index('role="alert"'):].split("</p>")[0]))
    assert answers[0] == answers[1]
    assert answers[0][0] == 429 and LOCKED in answers[0][2]


def test_usernames_are_locked_case_insensitively(rate_limits, client, org_a):
    rate_limits(SIGN_IN_FAILURES_PER_USERNAME=2)
    user = operator(org_a, "viewer")
    sign_in(client, user.username.upper(), "wrong")
    sign_in(client, user.username, "wrong")
    assert sign_in(client, user.username, PASSWORD).status_code == 429


def test_one_address_guessing_many_usernames_is_locked_out(rate_limits, client, org_a):
    rate_limits(SIGN_IN_FAILURES_PER_ADDRESS=4)
    user = operator(org_a, "viewer")
    for n in range(4):
        sign_in(client, f"guess-{n}", "wrong")
    response = sign_in(client, user.username, PASSWORD)
    assert response.status_code == 429 and LOCKED in response.content.decode()
    assert sign_in(Client(REMOTE_ADDR="192.0.2.20"), user.username, PASSWORD).status_code == 302


def test_the_right_password_clears_the_usernames_failures(rate_limits, client, org_a):
    rate_limits(SIGN_IN_FAILURES_PER_USERNAME=3)
    user = operator(org_a, "viewer")
    for _ in range(2):
        sign_in(client, user.username, "wrong")
    assert sign_in(client, user.username, PASSWORD).status_code == 302
    client.post("/console/sign-out/")
    for _ in range(2):
        assert sign_in(client, user.username, "wrong").status_code == 200  # counted from zero again


def test_the_lockout_ends_when_its_time_is_up(rate_limits, client, org_a):
    import time

    rate_limits(SIGN_IN_FAILURES_PER_USERNAME=1, SIGN_IN_LOCKOUT_SECONDS=1)
    user = operator(org_a, "viewer")
    assert sign_in(client, user.username, "wrong").status_code == 429
    time.sleep(1.1)
    assert sign_in(client, user.username, PASSWORD).status_code == 302


def test_admin_sign_in_shares_the_lockout(rate_limits, client):
    rate_limits(SIGN_IN_FAILURES_PER_USERNAME=2)
    get_user_model().objects.create_superuser("root-admin", password=PASSWORD)
    for _ in range(2):
        client.post("/admin/login/", {"username": "root-admin", "password": "wrong"})
    response = client.post("/admin/login/", {"username": "root-admin", "password": PASSWORD})
    assert response.status_code == 200 and LOCKED in response.content.decode()
    assert "_auth_user_id" not in client.session


def test_with_redis_unreachable_sign_in_still_works(rate_limits, settings, client, org_a):
    rate_limits(SIGN_IN_FAILURES_PER_USERNAME=1)
    settings.REDIS_URL = "redis://127.0.0.1:1/0"
    user = operator(org_a, "viewer")
    assert sign_in(client, user.username, "wrong").status_code == 200
    assert sign_in(client, user.username, PASSWORD).status_code == 302


def test_guesses_sent_at_once_cannot_pass_the_limit_together(rate_limits, org_a):
    """Each attempt is counted before its password is checked: with 3 allowed, the 4th of
    four guesses in flight at once is refused unchecked, and a right password among the first
    three takes back its own count only."""
    from console.sign_in import SignInAttempt

    rate_limits(SIGN_IN_FAILURES_PER_USERNAME=3, SIGN_IN_FAILURES_PER_ADDRESS=100)
    user = operator(org_a, "viewer")
    in_flight = [SignInAttempt(username=user.username, address="192.0.2.7") for _ in range(4)]
    assert [attempt.locked_for > 0 for attempt in in_flight] == [False, False, False, True]

    rate_limits(SIGN_IN_FAILURES_PER_USERNAME=100, SIGN_IN_FAILURES_PER_ADDRESS=3)
    other = operator(org_a, "viewer")
    first, second = (SignInAttempt(username=other.username, address="192.0.2.8") for _ in range(2))
    first.succeeded()
    # The address has one attempt left in its count (second's); three more reach 4 > 3.
    later = [SignInAttempt(username=f"guess-{n}", address="192.0.2.8") for n in range(3)]
    assert [attempt.locked_for > 0 for attempt in later] == [False, False, True]
