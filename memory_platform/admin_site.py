"""Django admin for administrators (staff users), across organisations.

Administration is cross-tenant work: every admin view of a staff user runs, rendering
included, as the service account. Anyone else never reaches a view (the admin's own login
check comes first).
"""

from functools import wraps

from django.contrib import admin

from console.sign_in import AdminSignInForm
from tenants.context import service_account


class MemoryPlatformAdminSite(admin.AdminSite):
    site_header = "Memory Platform administration"
    site_title = "Memory Platform admin"
    # The console's lockout: wrong passwords here count against the same username and address.
    login_form = AdminSignInForm

    def admin_view(self, view, cacheable=False):
        checked = super().admin_view(view, cacheable)

        @wraps(checked)
        def as_service_account(request, *args, **kwargs):
            if not (request.user.is_active and request.user.is_staff):
                return checked(request, *args, **kwargs)  # the login page or a redirect to it
            with service_account():
                response = checked(request, *args, **kwargs)
                if hasattr(response, "render") and not response.is_rendered:
                    response.render()  # templates read querysets lazily: render inside the context
                return response

        return as_service_account
