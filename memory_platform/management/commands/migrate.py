from django.core.management.commands.migrate import Command as DjangoMigrateCommand

from memory_platform import database


class Command(DjangoMigrateCommand):
    help = (
        "Apply migrations as the schema owner (the `owner` connection, DATABASE_OWNER_URL), "
        "after checking that pgvector is there."
    )

    def add_arguments(self, parser):
        super().add_arguments(parser)
        parser.set_defaults(database="owner")

    def handle(self, *args, **options):
        database.require_pgvector(options["database"])
        database.grant_default_privileges(options["database"])
        return super().handle(*args, **options)
