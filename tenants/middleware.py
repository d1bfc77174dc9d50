import logging

from django.db import transaction
from django.http import HttpResponse, JsonResponse

from memories.api.errors import database_unreachable_body
from memory_platform import database
from memory_platform.log_format import request_route
from tenants import context

logger = logging.getLogger(__name__)

UNREACHABLE_PAGE = ("<!doctype html><title>Service unavailable</title><h1>Service unavailable</h1>"
                    "<p>The database cannot be reached. Try again in a few seconds.</p>")


class TenantTransactionMiddleware:
    """Wrap the whole request (later middleware, view and template rendering) in one transaction.

    The request starts with no tenant: every tenant table reads as empty until authentication
    (an API key, an operator's chosen organisation) calls context.activate_org(). A response
    with an error status rolls the transaction back, so a rejected request changes nothing.

    While the database is out of reach (down, restarting, the connection lost), whether that
    shows as the transaction opens, in the view or as it commits, the answer is 503 with
    Retry-After: JSON under /api/, a plain page elsewhere.

    /health is left out: it reads no tenant data, and it must answer (503, in JSON) when the
    database does not, which a transaction opened first would turn into an error page.
    """

    OUTSIDE = ("/health",)

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if request.path in self.OUTSIDE:
            return self.get_response(request)
        try:
            with transaction.atomic():
                context.deactivate()
                response = self.get_response(request)
                if response.status_code >= 400:
                    transaction.set_rollback(True)
        except Exception as exc:
            if not database.unreachable(exc):
                raise
            return database_unreachable(request, exc)
        return response

    def process_exception(self, request, exception):
        """A view's (or the API-key lookup's) failure to reach the database."""
        if database.unreachable(exception):
            return database_unreachable(request, exception)
        return None


def database_unreachable(request, exc: BaseException) -> HttpResponse:
    # One line, by type, route and no value; Django would log the response again, with its path.
    logger.warning("database unreachable (%s): %s %s answered 503", type(exc).__name__, request.method,
                   request_route(request))
    if request.path.startswith("/api/"):
        response = JsonResponse(database_unreachable_body(), status=503)
    else:
        response = HttpResponse(UNREACHABLE_PAGE, status=503)
    response["Retry-After"] = str(database.UNREACHABLE_RETRY_SECONDS)
    response._has_been_logged = True
    return response
