from django.core.management.base import BaseCommand, CommandError
from django.db import connections

from memory_platform import distribution
from memory_platform.database import citus_present


class Command(BaseCommand):
    help = ("Spread the organisations' shard groups evenly over the Citus workers, a worker added "
            "since getting its share, while the product serves: each group moves by logical "
            "replication, its writes waiting only for the switch at the end (docs/adr/0042). "
            "Run as the tables' owner (the default) or a superuser.")

    def add_arguments(self, parser):
        parser.add_argument("--transfer-mode", default="auto", choices=distribution.TRANSFER_MODES,
                            help="how a moving group's writes are held: auto (logical), force_logical, "
                                 "block_writes (held for the whole copy)")
        parser.add_argument("--database", default="owner")

    def handle(self, *args, transfer_mode: str, database: str, **options):
        if not citus_present(database):
            raise CommandError("this database has no Citus extension: it is a single PostgreSQL")
        from tqdm import tqdm

        bar = tqdm(unit="move", desc="rebalancing")

        def moved(done: int, total: int) -> None:
            bar.total = total
            bar.n = done
            bar.refresh()

        try:
            with connections[database].cursor() as cursor:
                moves = distribution.rebalance(cursor, transfer_mode=transfer_mode, progress=moved)
        except PermissionError as exc:
            raise CommandError(str(exc)) from None
        finally:
            bar.close()
        self.stdout.write(f"{moves} shard moves." if moves else "The shard groups are balanced already.")
