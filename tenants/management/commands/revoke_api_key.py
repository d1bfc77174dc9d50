from django.core.management.base import BaseCommand

from tenants import services
from tenants.context import tenant_context
from tenants.management import lookups


class Command(BaseCommand):
    help = "Revoke an API key, by its id or its displayed prefix."

    def add_arguments(self, parser):
        parser.add_argument("organization", help="organisation slug or id")
        parser.add_argument("key", help="API key id or prefix (e.g. mp_AbCdEfGh)")

    def handle(self, *args, organization, key, **options):
        api_key = lookups.api_key_find(lookups.organization_find(organization), key)
        with tenant_context(api_key.org_id):
            services.api_key_revoke(api_key=api_key)
        self.stdout.write(f"API key {api_key.prefix}… revoked")
