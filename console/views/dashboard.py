"""The console's front door: where /console/ leads, and each organisation's dashboard."""

from django.contrib.auth.views import redirect_to_login
from django.shortcuts import redirect
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_GET

from console import dashboard
from console.access import VIEWER, console_view, memberships_of
from console.responses import page


@require_GET
def home(request):
    """/console/: the first organisation the operator belongs to."""
    if not request.user.is_authenticated:
        return redirect_to_login(request.get_full_path())
    memberships = [m for m in memberships_of(request.user) if m.org.is_active]
    if not memberships:
        return page(request, "console/no_organisation.html", {}, status=403)
    return redirect("console:dashboard", memberships[0].org.slug)


@require_GET
@console_view(VIEWER)
def dashboard_view(request):
    stats = dashboard.stats(request.caller)
    # The chart is matplotlib's SVG of dates and counts only: no operator or agent text in it.
    chart = mark_safe(dashboard.growth_chart_svg(stats.added_per_day))
    return page(request, "console/dashboard.html", {"stats": stats, "chart": chart})
