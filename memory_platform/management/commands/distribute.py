from django.core.management.base import BaseCommand, CommandError

from memory_platform import distribution
from memory_platform.database import citus_present


class Command(BaseCommand):
    help = ("Convert a database in place to the Citus layout (memory_platform.distribution): "
            "every tenant table distributed by org_id, the tables they reference on every node. "
            "Run it on the coordinator once the existing database has the citus extension and its "
            "workers are added; `migrate` does the same after it migrates. One transaction: a "
            "failure leaves the database as it was.")

    def add_arguments(self, parser):
        parser.add_argument("--database", default="owner")

    def handle(self, *args, database: str, **options):
        if not citus_present(database):
            raise CommandError("this database has no Citus extension: a superuser runs CREATE EXTENSION citus "
                               "on the coordinator and adds the workers (citus_add_node) first")
        from tqdm import tqdm

        todo = [p for p in distribution.plan(database) if p.kind != "local"
                and p.table not in distribution.placed(database)]
        if not todo:
            self.stdout.write("Every table is already placed.")
            return
        with tqdm(total=len(todo), unit="table", desc="distributing") as bar:
            def step(message: str) -> None:
                bar.set_postfix_str(message.split("] ", 1)[-1])
                bar.update(1)

            placed = distribution.distribute(database, progress=step)
        self.stdout.write(f"Placed {len(placed)} tables.")
