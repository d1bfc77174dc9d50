from django.core.management.base import BaseCommand, CommandError
from django.db import IntegrityError

from tenants import services
from tenants.context import tenant_context
from tenants.management import lookups


class Command(BaseCommand):
    help = "Create an agent in an organisation, and issue its first API key (printed once)."

    def add_arguments(self, parser):
        parser.add_argument("organization", help="organisation slug or id")
        parser.add_argument("name")
        parser.add_argument("--description", default="")
        parser.add_argument("--no-key", action="store_true", help="do not issue an API key")

    def handle(self, *args, organization, name, description, no_key, **options):
        org = lookups.organization_find(organization)
        with tenant_context(org.id):
            try:
                agent = services.agent_create(org=org, name=name, description=description)
            except IntegrityError:
                raise CommandError(f"{org.slug} already has an agent named {name!r}") from None
            except ValueError as refused:  # a name holding a secret (or, by policy, personal data)
                raise CommandError(str(refused)) from None
            self.stdout.write(f"agent {agent.name} created in {org.slug}: id {agent.id}")
            if not no_key:
                api_key, key = services.api_key_issue(agent=agent, name="first key")
                self.stdout.write(f"API key {api_key.prefix}… (shown once): {key}")
