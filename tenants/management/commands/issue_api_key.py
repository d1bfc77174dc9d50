from django.core.management.base import BaseCommand

from tenants import services
from tenants.management import lookups


class Command(BaseCommand):
    help = "Issue a new API key for an agent. The key is printed once and stored only as a hash."

    def add_arguments(self, parser):
        parser.add_argument("organization", help="organisation slug or id")
        parser.add_argument("agent", help="agent name or id")
        parser.add_argument("--name", default="", help="a label for the key")

    def handle(self, *args, organization, agent, name, **options):
        agent = lookups.agent_find(lookups.organization_find(organization), agent)
        api_key, key = services.api_key_issue(agent=agent, name=name)
        self.stdout.write(f"API key {api_key.prefix}… for {agent.name} (id {api_key.id}), shown once:\n{key}")
