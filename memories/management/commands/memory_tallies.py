from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from memories.lifecycle import tallies
from tenants.context import service_account, tenant_context
from tenants.management import lookups
from tenants.models import Organization


class Command(BaseCommand):
    help = ("The memories' tallies the stats and the dashboard read (docs/adr/0045): fold the pending deltas, "
            "check them against a count of the memories (--verify), or count them again (--rebuild).")

    def add_arguments(self, parser):
        action = parser.add_mutually_exclusive_group(required=True)
        action.add_argument("--fold", action="store_true", help="Fold the pending deltas now (the worker does "
                                                                 "every 30 s).")
        action.add_argument("--verify", action="store_true", help="Compare each organisation's tallies with a "
                                                                   "count of its memories; exit 1 if any differ.")
        action.add_argument("--rebuild", action="store_true", help="Count the tallies again from the memories "
                                                                    "(after writes that bypassed the triggers).")
        parser.add_argument("--org", help="Only this organisation (slug or id); default: every one.")

    def handle(self, *args, fold=False, verify=False, rebuild=False, org=None, **options):
        if fold:
            done = tallies.fold()
            self.stdout.write(f"folded {done['folded']} deltas, {done['emptied']} tallies that count nothing any more")
            return
        if org:
            organizations = [lookups.organization_find(org)]
        else:
            with service_account():
                organizations = list(Organization.objects.order_by("slug"))
        differing = 0
        for organization in tqdm(organizations, desc="memory tallies", unit="org", file=self.stderr):
            with tenant_context(organization.id):
                if rebuild:
                    rows = tallies.rebuild(organization.id)
                    self.stdout.write(f"{organization.slug}: {rows} tallies written")
                    continue
                found = tallies.differences(organization.id)
            differing += bool(found)
            for key, kept, counted in found[:20]:
                if key[0] == "day":
                    self.stdout.write(f"{organization.slug}: created on {key[1]} kept {kept[0]}, counted {counted[0]}")
                    continue
                self.stdout.write(f"{organization.slug}: {dict(zip(tallies.KEY, map(str, key)))} kept "
                                  f"{dict(zip(tallies.COUNTS, kept))}, counted {dict(zip(tallies.COUNTS, counted))}")
            if len(found) > 20:
                self.stdout.write(f"{organization.slug}: ... and {len(found) - 20} more")
        if verify:
            if differing:
                raise CommandError(f"{differing} of {len(organizations)} organisations' tallies differ from their "
                                   "memories: run memory_tallies --rebuild")
            self.stdout.write(self.style.SUCCESS(f"{len(organizations)} organisations' tallies match their memories"))
