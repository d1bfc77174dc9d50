from django.core.management.base import BaseCommand, CommandError
from django.db import transaction
from tqdm import tqdm

from memories.vectors import index as vector_index


class Command(BaseCommand):
    help = ("Rebuild the vector index on memories.embedding as HNSW or IVFFlat (default: the configured kind); "
            "with --tenants, create and drop the large tenants' own indexes instead.")

    def add_arguments(self, parser):
        parser.add_argument("--kind", choices=vector_index.KINDS, help="Index kind; default MEMORY_PLATFORM_VECTOR_INDEX.")
        parser.add_argument("--tenants", action="store_true",
                            help="Give each large tenant an HNSW index of its own, drop those no longer needed "
                                 "(what the worker does every hour).")

    def handle(self, *args, kind=None, tenants=False, **options):
        if tenants:
            if kind:
                raise CommandError("--kind and --tenants are separate: tenants' own indexes are always HNSW")
            return self.sync_tenants()
        try:
            with transaction.atomic(using="owner"):
                built = vector_index.rebuild(kind)
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(self.style.SUCCESS(f"vector index {vector_index.INDEX_NAME} is now {built}"))

    def sync_tenants(self):
        created = []
        with tqdm(total=0, desc="tenants' vector indexes", unit="index", file=self.stderr) as bar:
            def planned(plan):
                bar.total += len(plan.create)
                bar.refresh()

            def building(plan, org_id):
                bar.set_postfix_str(f"{org_id} ({plan.sizes[org_id]:,} {plan.kind.name})")

            def built(plan, org_id):
                bar.update()
                created.append(f"created {vector_index.tenant_index_name(org_id, plan.kind)} "
                               f"({plan.sizes[org_id]:,} {plan.kind.name})")

            changes = vector_index.sync_tenant_indexes(on_plan=planned, on_create=building, on_created=built)
        for line in created:
            self.stdout.write(line)
        for name in changes.dropped:
            self.stdout.write(f"dropped {name}")
        held = ", ".join(f"{len(vector_index.tenant_indexes(kind, using='owner'))} of their {kind.name}"
                         for kind in vector_index.OWN_KINDS)
        self.stdout.write(self.style.SUCCESS(f"tenants with a vector index of their own: {held}"))
