"""Who may see and do what in the console.

Every console URL names its organisation (/console/<slug>/...). A view decorated with
`console_view(role)` runs only for a signed-in operator who is a member of that organisation
with at least `role`, and runs as that organisation: row-level security then hides every
other organisation's rows, so another organisation's object is a 404 like a missing one. The
operator is the request's Caller (`request.caller`), reaching the whole organisation, its
changes recorded as theirs.
"""

from __future__ import annotations

from functools import wraps
from urllib.parse import urlencode

from django.contrib.auth.views import redirect_to_login
from django.http import Http404, HttpResponse
from django.shortcuts import render
from django.urls import reverse

from console.responses import failed
from memories.access import Caller
from tenants import context
from tenants.models import Membership, Organization

VIEWER, OPERATOR, ADMIN = Membership.Role.VIEWER, Membership.Role.OPERATOR, Membership.Role.ADMIN
RANK = {VIEWER: 1, OPERATOR: 2, ADMIN: 3}


def memberships_of(user) -> list[Membership]:
    """The operator's memberships in every organisation, with each organisation's name. Only
    these reads see across organisations: the operator's own memberships (memberships_own_rows),
    then the organisations they name (organizations_of_member)."""
    context.activate_user(user.pk)
    try:
        memberships = list(Membership.objects.filter(user=user))
        context.activate_member_orgs(m.org_id for m in memberships)
        organisations = Organization.objects.in_bulk([m.org_id for m in memberships])
    finally:
        context.activate_user(None)
        context.activate_member_orgs(())
    for membership in memberships:
        membership.org = organisations[membership.org_id]
    return sorted(memberships, key=lambda m: m.org.name.casefold())


def may(membership: Membership | None, role: str) -> bool:
    return membership is not None and RANK[membership.role] >= RANK[role]


def sign_in_first(request):
    if request.htmx:
        # A session that ended under an open page: load the sign-in page whole, not into a fragment.
        response = HttpResponse(status=204)
        next_url = request.htmx.current_url_abs_path or reverse("console:home")
        response["HX-Redirect"] = f"{reverse('console:sign-in')}?{urlencode({'next': next_url})}"
        return response
    return redirect_to_login(request.get_full_path())


def console_view(role: str = VIEWER):
    def decorate(view):
        @wraps(view)
        def checked(request, org_slug, *args, **kwargs):
            if not request.user.is_authenticated:
                return sign_in_first(request)
            memberships = memberships_of(request.user)
            membership = next((m for m in memberships if m.org.slug == org_slug and m.org.is_active), None)
            if membership is None:
                # Not a member: the organisation does not exist as far as this operator knows.
                raise Http404("no such organisation")
            context.activate_org(membership.org_id)
            request.org, request.membership, request.memberships = membership.org, membership, memberships
            request.caller = Caller.operator(membership.org_id, request.user)  # what the use cases take
            if not may(membership, role):
                if request.htmx:
                    return failed(request, f"This needs the {role} role.", "", status=403)
                return render(request, "console/forbidden.html", {"needed": role}, status=403)
            try:
                return view(request, *args, **kwargs)
            except Http404:
                if not request.htmx:
                    raise
                # An inline action on something gone meanwhile: say so, leave the page as it is.
                return failed(request, "Not found: it was deleted or changed meanwhile. Reload the page.", "",
                              status=404)

        checked.console_role = role
        return checked

    return decorate
