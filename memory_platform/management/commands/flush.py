from django.core.management.commands.flush import Command as DjangoFlushCommand


class Command(DjangoFlushCommand):
    help = (
        "Empty every table, as the schema owner: TRUNCATE ignores row-level security, so the "
        "runtime role is never given it."
    )

    def add_arguments(self, parser):
        super().add_arguments(parser)
        parser.set_defaults(database="owner")

    def handle(self, **options):
        # The runtime connection and the owner connection reach the same database.
        if options["database"] == "default":
            options["database"] = "owner"
        return super().handle(**options)
