import uuid

from django.core.management.base import BaseCommand, CommandError
from django.db import connections

from memory_platform import distribution
from memory_platform.database import citus_present


class Command(BaseCommand):
    help = ("Give one organisation a shard group of its own (its rows only, in every table), and "
            "with --node move it to that worker: what a large organisation gets before it outgrows "
            "its neighbours (docs/adr/0042). The split holds the organisation's writes while it "
            "copies; the move lets them go on. Run as the tables' owner (the default) or a superuser.")

    def add_arguments(self, parser):
        parser.add_argument("organization", help="the organisation's id")
        parser.add_argument("--node", help="the worker to move it to, as cluster_status names it (name:port)")
        parser.add_argument("--database", default="owner")

    def handle(self, *args, organization: str, node: str | None, database: str, **options):
        try:
            org_id = uuid.UUID(organization)
        except ValueError:
            raise CommandError(f"organization: not an id: {organization!r}") from None
        if not citus_present(database):
            raise CommandError("this database has no Citus extension: it is a single PostgreSQL")
        with connections[database].cursor() as cursor:
            cursor.execute("SELECT 1 FROM organizations WHERE id = %s", [org_id])
            if cursor.fetchone() is None:
                raise CommandError(f"organization: no organisation {org_id}")
        workers = {f"{n['name']}:{n['port']}": n for n in distribution.nodes(database) if n["role"] == "worker"}
        if node is not None and node not in workers:
            raise CommandError(f"node: no worker {node!r}; the workers are {', '.join(sorted(workers))}")
        try:
            with connections[database].cursor() as cursor:
                shard = distribution.isolate_organization(cursor, org_id)
                self.stdout.write(f"Organisation {org_id} has shard group {shard} of its own.")
                if node is not None:
                    target = workers[node]
                    moved = distribution.move_shard_group(cursor, shard, node=target["name"], port=target["port"])
                    self.stdout.write(f"Moved to {node}." if moved else f"Already on {node}.")
        except (PermissionError, RuntimeError) as exc:
            raise CommandError(str(exc)) from None
