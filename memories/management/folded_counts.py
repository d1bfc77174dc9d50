"""One command shape for counts kept by triggers as deltas and folded (the lexicon's word
statistics, the memories' tallies): fold the pending deltas, check the counts against the rows
(--verify), or count them again (--rebuild), for every organisation or one."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from tenants.context import service_account, tenant_context
from tenants.management import lookups
from tenants.models import Organization

SHOWN = 20  # differences written per organisation


class FoldedCountsCommand(BaseCommand):
    """A subclass names its counts (`counts`: "statistics", "tallies"), the module keeping them
    (`keeper`: fold(), rebuild(org_id), differences(org_id)) and says how a fold and a
    difference read (`folded`, `difference`)."""

    counts = ""
    keeper = None

    def folded(self, done: dict) -> str:
        raise NotImplementedError

    def difference(self, key, kept, counted) -> str:
        raise NotImplementedError

    def add_arguments(self, parser):
        action = parser.add_mutually_exclusive_group(required=True)
        action.add_argument("--fold", action="store_true", help="Fold the pending deltas now (the worker does "
                                                                 "every 30 s).")
        action.add_argument("--verify", action="store_true", help=f"Compare each organisation's {self.counts} "
                                                                   "with a count of its memories; exit 1 if any differ.")
        action.add_argument("--rebuild", action="store_true", help=f"Count the {self.counts} again from the "
                                                                    "memories (after writes that bypassed the triggers).")
        parser.add_argument("--org", help="Only this organisation (slug or id); default: every one.")

    def handle(self, *args, fold=False, verify=False, rebuild=False, org=None, **options):
        if fold:
            self.stdout.write(self.folded(self.keeper.fold()))
            return
        if org:
            organizations = [lookups.organization_find(org)]
        else:
            with service_account():
                organizations = list(Organization.objects.order_by("slug"))
        differing = 0
        for organization in tqdm(organizations, desc=self.command_name, unit="org", file=self.stderr):
            with tenant_context(organization.id):
                if rebuild:
                    rows = self.keeper.rebuild(organization.id)
                    self.stdout.write(f"{organization.slug}: {rows} rows of {self.counts} written")
                    continue
                found = self.keeper.differences(organization.id)
            differing += bool(found)
            for key, kept, counted in found[:SHOWN]:
                self.stdout.write(f"{organization.slug}: {self.difference(key, kept, counted)}")
            if len(found) > SHOWN:
                self.stdout.write(f"{organization.slug}: ... and {len(found) - SHOWN} more")
        if verify:
            if differing:
                raise CommandError(f"{differing} of {len(organizations)} organisations' {self.counts} differ from "
                                   f"their memories: run {self.command_name} --rebuild")
            self.stdout.write(self.style.SUCCESS(f"{len(organizations)} organisations' {self.counts} match their "
                                                 "memories"))

    @property
    def command_name(self) -> str:
        return type(self).__module__.rsplit(".", 1)[-1]
