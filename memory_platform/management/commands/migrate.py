from django.core.management.commands.migrate import Command as DjangoMigrateCommand
from django.db import connections

from memory_platform import database, distribution


class Command(DjangoMigrateCommand):
    help = (
        "Apply migrations as the schema owner (the `owner` connection, DATABASE_OWNER_URL), "
        "after checking that pgvector is there; on a Citus cluster, then place every new table "
        "(distributed by organisation, reference or local: memory_platform.distribution)."
    )

    def add_arguments(self, parser):
        super().add_arguments(parser)
        parser.set_defaults(database="owner")

    def handle(self, *args, **options):
        using = options["database"]
        database.require_pgvector(using)
        database.grant_default_privileges(using)
        result = super().handle(*args, **options)
        if database.citus_present(using):
            say = self.stdout.write if options["verbosity"] >= 1 else None
            placed = distribution.distribute(using, progress=say)
            if placed and say:
                say(f"Placed {len(placed)} tables on the Citus cluster.")
            # The database's settings (SET LOCAL sent to the workers) reach new sessions only:
            # this process's next statement, `manage.py run`'s demo data say, opens one.
            connections.close_all()
        return result
