"""Agents and their API keys, for an organisation's admins: create an agent, issue a key
(shown once, in the answer to the request that made it), revoke one."""

from django.db import IntegrityError, transaction
from django.db.models import Count, OuterRef, Subquery
from django.db.models.functions import Coalesce
from django.http import Http404
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_POST

from console.access import ADMIN, console_view
from console.forms import AgentForm, ApiKeyForm
from console.responses import INVALID, done, page
from tenants import services
from tenants.models import Agent, ApiKey


def _agents(request):
    # A subquery, not a GROUP BY: the table's real key is (org_id, id), which Django does not know.
    active_keys = (ApiKey.objects.filter(org_id=OuterRef("org_id"), agent_id=OuterRef("pk"), revoked_at__isnull=True)
                   .order_by().values("agent_id").annotate(n=Count("id")).values("n"))
    return Agent.objects.filter(org_id=request.org.id).annotate(
        active_keys=Coalesce(Subquery(active_keys), 0)).order_by("name")


@console_view(ADMIN)
def agent_list(request):
    form = AgentForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            with transaction.atomic():
                agent = services.agent_create(org=request.org, name=form.cleaned_data["name"].strip(),
                                              description=form.cleaned_data["description"])
        except IntegrityError:
            form.add_error("name", "this organisation already has an agent with that name")
        except ValueError as refused:  # a name the organisation's policy refuses (personal data)
            form.add_error("name", str(refused))
        else:
            return done(request, f"Agent {agent.name!r} created. Issue it a key below.",
                        reverse("console:agent", args=[request.org.slug, agent.pk]))
    return page(request, "console/agent_list.html", {"agents": _agents(request), "form": form},
                status=INVALID if request.method == "POST" else 200)


def _agent(request, agent_id) -> Agent:
    try:
        return Agent.objects.get(org_id=request.org.id, pk=agent_id)
    except (Agent.DoesNotExist, ValueError):
        raise Http404("no such agent") from None


def _keys(request, agent):
    return ApiKey.objects.filter(org_id=request.org.id, agent=agent).select_related("created_by").order_by("-created_at")


@require_GET
@console_view(ADMIN)
def agent_detail(request, agent_id):
    agent = _agent(request, agent_id)
    return page(request, "console/agent_detail.html", {"agent": agent, "keys": _keys(request, agent),
                                                       "form": ApiKeyForm()})


@never_cache  # the answer holds the key: no browser cache or back button may bring it back
@require_POST
@console_view(ADMIN)
def api_key_issue(request, agent_id):
    agent = _agent(request, agent_id)
    form = ApiKeyForm(request.POST)
    if form.is_valid():
        try:
            api_key, key = services.api_key_issue(agent=agent, name=form.cleaned_data["name"],
                                                  created_by=request.user, namespaces=form.cleaned_data["namespaces"],
                                                  read_only=form.cleaned_data["read_only"])
        except ValueError as refused:  # a namespace the organisation's policy refuses (personal data)
            form.add_error("namespaces", str(refused))
    if not form.is_valid():
        return page(request, "console/agent_detail.html", {"agent": agent, "keys": _keys(request, agent),
                                                           "form": form}, partial="keys", status=INVALID)
    # The key is in this answer only: it is never stored, so a redirect could not show it.
    return page(request, "console/agent_detail.html", {
        "agent": agent, "keys": _keys(request, agent), "form": ApiKeyForm(), "new_key": key, "new_api_key": api_key},
        partial="keys")


@require_POST
@console_view(ADMIN)
def api_key_revoke(request, agent_id, key_id):
    agent = _agent(request, agent_id)
    try:
        api_key = ApiKey.objects.get(org_id=request.org.id, agent=agent, pk=key_id)
    except (ApiKey.DoesNotExist, ValueError):
        raise Http404("no such key") from None
    services.api_key_revoke(api_key=api_key)
    return done(request, f"Key {api_key.prefix}… revoked: it no longer authenticates.",
                reverse("console:agent", args=[request.org.slug, agent.pk]),
                template="console/agent_detail.html#keys",
                context={"agent": agent, "keys": _keys(request, agent), "form": ApiKeyForm()})
