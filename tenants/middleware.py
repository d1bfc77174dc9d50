from django.db import transaction

from tenants import context


class TenantTransactionMiddleware:
    """Wrap the whole request (later middleware, view and template rendering) in one transaction.

    The request starts with no tenant: every tenant table reads as empty until authentication
    (an API key, an operator's chosen organisation) calls context.activate_org(). A response
    with an error status rolls the transaction back, so a rejected request changes nothing.

    /health is left out: it reads no tenant data, and it must answer (503, in JSON) when the
    database does not, which a transaction opened first would turn into an error page.
    """

    OUTSIDE = ("/health",)

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if request.path in self.OUTSIDE:
            return self.get_response(request)
        with transaction.atomic():
            context.deactivate()
            response = self.get_response(request)
            if response.status_code >= 400:
                transaction.set_rollback(True)
        return response
