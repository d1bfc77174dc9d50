from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from memories.understanding import lexicon
from tenants.context import service_account, tenant_context
from tenants.management import lookups
from tenants.models import Organization


class Command(BaseCommand):
    help = ("The word statistics full text ranks by (BM25, docs/adr/0037): fold the pending deltas, "
            "check them against a count of the memories (--verify), or count them again (--rebuild).")

    def add_arguments(self, parser):
        action = parser.add_mutually_exclusive_group(required=True)
        action.add_argument("--fold", action="store_true", help="Fold the pending deltas now (the worker does "
                                                                 "every 30 s).")
        action.add_argument("--verify", action="store_true", help="Compare each organisation's statistics with a "
                                                                   "count of its live memories; exit 1 if any differ.")
        action.add_argument("--rebuild", action="store_true", help="Count the statistics again from the memories "
                                                                    "(after writes that bypassed the triggers).")
        parser.add_argument("--org", help="Only this organisation (slug or id); default: every one.")

    def handle(self, *args, fold=False, verify=False, rebuild=False, org=None, **options):
        if fold:
            done = lexicon.fold()
            self.stdout.write(f"folded {done['folded']} deltas, {done['emptied']} words no memory holds any more")
            return
        if org:
            organizations = [lookups.organization_find(org)]
        else:
            with service_account():
                organizations = list(Organization.objects.order_by("slug"))
        differing = 0
        for organization in tqdm(organizations, desc="lexical statistics", unit="org", file=self.stderr):
            with tenant_context(organization.id):
                if rebuild:
                    rows = lexicon.rebuild(organization.id)
                    self.stdout.write(f"{organization.slug}: {rows} statistics rows written")
                    continue
                found = lexicon.differences(organization.id)
            differing += bool(found)
            for lexeme, kept, counted in found[:20]:
                self.stdout.write(f"{organization.slug}: {lexeme or '(all words)'!r} kept docs/tokens {kept}, "
                                  f"counted {counted}")
            if len(found) > 20:
                self.stdout.write(f"{organization.slug}: ... and {len(found) - 20} more")
        if verify:
            if differing:
                raise CommandError(f"{differing} of {len(organizations)} organisations' statistics differ from "
                                   "their memories: run lexical_stats --rebuild")
            self.stdout.write(self.style.SUCCESS(f"{len(organizations)} organisations' statistics match their "
                                                 "memories"))
