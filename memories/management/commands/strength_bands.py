from django.core.management.base import BaseCommand

from memories.lifecycle import decay
from tenants.management import lookups


class Command(BaseCommand):
    help = ("Count the strength bands and the weakest memories the stats, the dashboard and the weak list read "
            "(docs/adr/0045, 0055) now, as the worker does every 10 minutes: every organisation's, or one's.")

    def add_arguments(self, parser):
        parser.add_argument("--org", help="Only this organisation (slug or id); default: every one.")

    def handle(self, *args, org=None, **options):
        if org:
            organization = lookups.organization_find(org)
            counted = decay.count_organisation_bands(org_id=organization.id)
            self.stdout.write(f"{organization.slug}: {counted}")
            return
        done = decay.count_bands()
        self.stdout.write(f"bands counted for {done['organisations']} organisations")
