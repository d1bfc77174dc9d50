from django.core.management.base import BaseCommand

from tenants import services


class Command(BaseCommand):
    help = "Create (or reuse) the demo organisation and agent, issue a fresh API key for it, and print them."

    def handle(self, *args, **options):
        org, _ = services.organization_get_or_create(name="Demo organisation", slug="demo")
        agent, _ = services.agent_get_or_create(org=org, name="demo-agent")
        api_key, key = services.api_key_issue(agent=agent, name="demo key")
        self.stdout.write(
            "\n".join(
                [
                    "Demo tenant ready:",
                    f"  organisation  {org.name} ({org.id})",
                    f"  agent         {agent.name} ({agent.id})",
                    f"  API key       {key}",
                    "                (shown once; earlier demo keys stay valid until revoked)",
                ]
            )
        )
