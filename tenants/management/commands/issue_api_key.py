from django.core.management.base import BaseCommand, CommandError

from tenants import services
from tenants.context import tenant_context
from tenants.management import lookups


class Command(BaseCommand):
    help = "Issue a new API key for an agent. The key is printed once and stored only as a hash."

    def add_arguments(self, parser):
        parser.add_argument("organization", help="organisation slug or id")
        parser.add_argument("agent", help="agent name or id")
        parser.add_argument("--name", default="", help="a label for the key")
        parser.add_argument("--namespace", action="append", default=[], dest="namespaces",
                            help="limit the key to this namespace prefix, e.g. users/alice (repeatable)")
        parser.add_argument("--read-only", action="store_true", help="the key may read and search, never write")

    def handle(self, *args, organization, agent, name, namespaces, read_only, **options):
        agent = lookups.agent_find(lookups.organization_find(organization), agent)
        try:
            with tenant_context(agent.org_id):
                api_key, key = services.api_key_issue(agent=agent, name=name, namespaces=namespaces,
                                                      read_only=read_only)
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        reach = ", ".join(api_key.namespaces) or "the whole organisation"
        self.stdout.write(f"API key {api_key.prefix}… for {agent.name} (id {api_key.id}; reaches {reach}"
                          f"{'; read-only' if read_only else ''}), shown once:\n{key}")
