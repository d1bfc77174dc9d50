import os
import secrets

from django.core.management.base import BaseCommand

from memory_platform.security import DEFAULT_BIND, base_url
from tenants import services
from tenants.context import service_account, tenant_context
from tenants.models import Membership


class Command(BaseCommand):
    help = ("Create (or reuse) the demo organisation, agent and console user; issue a fresh API key and "
            "console password, and print them.")

    def add_arguments(self, parser):
        parser.add_argument("--url", help="Where the console is served (default: from MEMORY_PLATFORM_BIND).")

    def handle(self, *args, url=None, **options):
        url = (url or base_url(os.environ.get("MEMORY_PLATFORM_BIND") or DEFAULT_BIND)).rstrip("/")
        with service_account():
            org, _ = services.organization_get_or_create(name="Demo organisation", slug="demo")
        # The console's demo operator gets a fresh password on every run, printed like the key.
        user, _ = services.operator_account(username="demo")
        password = secrets.token_urlsafe(12)
        user.set_password(password)
        user.save(update_fields=["password"])
        with tenant_context(org.id):
            agent, _ = services.agent_get_or_create(org=org, name="demo-agent")
            api_key, key = services.api_key_issue(agent=agent, name="demo key")
            services.membership_set(org=org, user=user, role=Membership.Role.ADMIN)
        self.stdout.write(
            "\n".join(
                [
                    "Demo tenant ready:",
                    f"  organisation  {org.name} ({org.id})",
                    f"  agent         {agent.name} ({agent.id})",
                    f"  API key       {key}",
                    "                (shown once; earlier demo keys stay valid until revoked)",
                    f"  console       {url}/console/",
                    f"                user demo, password {password} (new on every run), admin of {org.slug}",
                ]
            )
        )
