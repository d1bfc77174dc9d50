"""The answers to an error nothing else handled (Django's handler400 and handler500).

Django turns an exception raised in a middleware into a response before an outer middleware
sees it, so a database that goes away while the session is saved, after the view, is out of
reach of the request transaction's handler (tenants.middleware). The session middleware even
reports that failure as the client's: a session "interrupted", 400. Here, with the exception
being handled, both get the request transaction's answer when the database is the cause (503
with Retry-After); any other error gets Django's plain page, with no detail.
"""

from __future__ import annotations

import sys

from django.views import defaults

from tenants.middleware import database_unavailable


def bad_request(request, exception):
    return database_unavailable(request, exception) or defaults.bad_request(request, exception)


def server_error(request):
    exc = sys.exception()
    answer = database_unavailable(request, exc) if exc is not None else None
    return answer or defaults.server_error(request)
