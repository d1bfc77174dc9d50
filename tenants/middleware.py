import logging

from django.db import transaction
from django.http import HttpResponse, JsonResponse

from memories.api.errors import database_contended_body, database_unreachable_body
from memory_platform import database
from memory_platform.log_format import request_route
from tenants import context

logger = logging.getLogger(__name__)

UNREACHABLE_PAGE = ("<!doctype html><title>Service unavailable</title><h1>Service unavailable</h1>"
                    "<p>The database cannot be reached. Try again in a few seconds.</p>")
CONTENDED_PAGE = ("<!doctype html><title>Service unavailable</title><h1>Service unavailable</h1>"
                  "<p>The request met another one's locks and was rolled back: nothing was changed. "
                  "Send it again.</p>")


class TenantTransactionMiddleware:
    """Wrap the whole request (later middleware, view and template rendering) in one transaction.

    The request starts with no tenant: every tenant table reads as empty until authentication
    (an API key, an operator's chosen organisation) calls context.activate_org(). A response
    with an error status rolls the transaction back, so a rejected request changes nothing.

    While the database is out of reach (down, restarting, the connection lost), whether that
    shows as the transaction opens, in the view or as it commits, the answer is 503 with
    Retry-After: JSON under /api/, a plain page elsewhere. So is a request the database rolled
    back whole to settle a deadlock with another (database.contended): it changed nothing, and
    the same request sent again goes through.

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
            answer = database_unavailable(request, exc)
            if answer is None:
                raise
            return answer
        return response

    def process_exception(self, request, exception):
        """A view's (or the API-key lookup's) failure to reach the database, or its
        transaction rolled back for a deadlock."""
        return database_unavailable(request, exception)


def database_unavailable(request, exc: BaseException) -> HttpResponse | None:
    """503 with Retry-After for a database out of reach or a transaction it rolled back for a
    deadlock; None for any other failure."""
    if database.unreachable(exc):
        return _unavailable(request, exc, "database unreachable", database_unreachable_body(), UNREACHABLE_PAGE,
                            database.UNREACHABLE_RETRY_SECONDS)
    if database.contended(exc):
        return _unavailable(request, exc, "transaction rolled back for a deadlock", database_contended_body(),
                            CONTENDED_PAGE, database.CONTENDED_RETRY_SECONDS)
    return None


def _unavailable(request, exc: BaseException, why: str, body: dict, page: str, retry_seconds: int) -> HttpResponse:
    # One line, by type, route and no value; Django would log the response again, with its path.
    logger.warning("%s (%s): %s %s answered 503", why, type(exc).__name__, request.method, request_route(request))
    if request.path.startswith("/api/"):
        response = JsonResponse(body, status=503)
    else:
        response = HttpResponse(page, status=503)
    response["Retry-After"] = str(retry_seconds)
    response._has_been_logged = True
    return response
